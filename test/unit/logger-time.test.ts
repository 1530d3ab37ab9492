/**
 * The log line's `time` field: ISO 8601 in UTC, as pino's own `isoTime` writes it, and current.
 */
import assert from 'node:assert/strict';
import pino from 'pino';
import { isoTimeCached } from '../../lib/logger';

describe('log time field', () => {
  it('matches pino isoTime and follows the clock', async () => {
    const ours = isoTimeCached();
    assert.match(ours, /^,"time":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"$/);
    const theirs = pino.stdTimeFunctions.isoTime();
    assert.ok(Math.abs(Date.parse(ours.slice(9, -1)) - Date.parse(theirs.slice(9, -1))) < 50);
    await new Promise((r) => setTimeout(r, 5));
    assert.notEqual(isoTimeCached(), ours, 'a later millisecond gives a later time');
  });
});
