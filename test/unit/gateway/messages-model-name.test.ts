/**
 * Model-name translation on the messages surface (docs/inference-surfaces.md): the bracketed long-context marker
 * goes first, then a dashed version at the end (optionally before a date) becomes dotted; every
 * other name passes unchanged.
 */
import assert from 'node:assert/strict';
import { translateMessagesModel } from '../../../gateway/translate/messages-surface/model-name';

const CASES: Array<[sent: string, looked_up: string, why: string]> = [
  ['family-4-6', 'family-4.6', 'dashed version'],
  ['family-4-6[1m]', 'family-4.6', 'marker removed, then translated'],
  ['family-4.6[1m]', 'family-4.6', 'marker removed from a dotted name'],
  ['family-4-6[200K]', 'family-4.6', 'marker in another size and case'],
  ['family-sub-4-5', 'family-sub-4.5', 'several name segments'],
  ['family-10-12', 'family-10.12', 'two-digit parts'],
  ['family-4-6-20250101', 'family-4.6-20250101', 'date suffix kept'],
  ['family-4-6-20250101[1m]', 'family-4.6-20250101', 'date suffix and marker'],
  ['family-4.6', 'family-4.6', 'already dotted'],
  ['family-4', 'family-4', 'one number is not a version pair'],
  ['gpt-4-0613', 'gpt-4-0613', 'a four-digit snapshot is not a minor version'],
  ['model-2024-01-01', 'model-2024-01-01', 'a date is not a version'],
  ['llama-3-1-8b', 'llama-3-1-8b', 'the version is not at the end'],
  ['family-3-5-name', 'family-3-5-name', 'older vendor order (version before the name) unchanged'],
  ['family-4-6-2025', 'family-4-6-2025', 'not an 8-digit date'],
  ['4-6', '4-6', 'no family name'],
  ['org/family-4-6', 'org/family-4-6', 'a slash is not a family name character'],
  ['family-4-6[beta]', 'family-4-6[beta]', 'a bracket that is not a context marker stays (and blocks the translation)'],
  ['family-4-6 ', 'family-4-6 ', 'trailing space unchanged'],
];

describe('messages surface: model-name translation', () => {
  for (const [sent, lookedUp, why] of CASES) {
    it(`${JSON.stringify(sent)} → ${JSON.stringify(lookedUp)} (${why})`, () => {
      assert.equal(translateMessagesModel(sent), lookedUp);
    });
  }
});
