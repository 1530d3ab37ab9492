/**
 * Generated chat titles (docs/agent-api.md "Titles"): the title call's body (first prompt cut to 4,000 characters,
 * `max_tokens` 256) and the sanitizing of the model's answer (one line, quotes and markdown
 * stripped, at most 80 characters; nothing usable is undefined).
 */
import assert from 'node:assert/strict';
import {
  GENERATED_TITLE_MAX_CHARS, TITLE_INPUT_MAX_CHARS, TITLE_SYSTEM_PROMPT, sanitizeGeneratedTitle, titleChatBody,
} from '../../agent/jobs/generated-titles';

interface Body {
  model: string;
  max_tokens: number;
  stream: boolean;
  messages: Array<{ role: string; content: string }>;
}

describe('generated chat titles', () => {
  describe('the title call', () => {
    it('sends the first prompt whole when it is short, with max_tokens 256 and the title system prompt', () => {
      const body = titleChatBody('agent-model', 'Fix the login test') as unknown as Body;
      assert.equal(body.model, 'agent-model');
      assert.equal(body.max_tokens, 256);
      assert.equal(body.stream, false);
      assert.deepEqual(body.messages, [{ role: 'system', content: TITLE_SYSTEM_PROMPT }, { role: 'user', content: 'Fix the login test' }]);
    });

    it('cuts the prompt to 4,000 characters (code points, never half a surrogate pair)', () => {
      assert.equal(TITLE_INPUT_MAX_CHARS, 4000);
      const exact = 'a'.repeat(4000);
      assert.equal((titleChatBody('m', exact) as unknown as Body).messages[1]!.content, exact);
      const long = `${'b'.repeat(3999)}😀😀 and more text after the cut`;
      const sent = (titleChatBody('m', long) as unknown as Body).messages[1]!.content;
      assert.equal(Array.from(sent).length, 4000);
      assert.equal(sent, `${'b'.repeat(3999)}😀`);
    });
  });

  describe('sanitizing the answer', () => {
    const cases: Array<[string, unknown, string | undefined]> = [
      ['plain', 'Fix flaky login test', 'Fix flaky login test'],
      ['surrounding whitespace', '  \n Fix flaky login test \n', 'Fix flaky login test'],
      ['double quotes', '"Fix flaky login test"', 'Fix flaky login test'],
      ['single quotes', "'Fix flaky login test'", 'Fix flaky login test'],
      ['typographic quotes', '\u201cFix flaky login test\u201d', 'Fix flaky login test'],
      ['guillemets', '\u00abCorriger le test\u00bb', 'Corriger le test'],
      ['backticks', '`Fix flaky login test`', 'Fix flaky login test'],
      ['bold', '**Fix flaky login test**', 'Fix flaky login test'],
      ['quoted bold', '"**Fix flaky login test**"', 'Fix flaky login test'],
      ['heading', '## Fix flaky login test', 'Fix flaky login test'],
      ['list item', '- Fix flaky login test', 'Fix flaky login test'],
      ['title label', 'Title: "Fix flaky login test"', 'Fix flaky login test'],
      ['bold title label', '**Title:** Fix flaky login test', 'Fix flaky login test'],
      ['inline code and link', 'Fix `auth.ts` per [the issue](https://x.test/1)', 'Fix auth.ts per the issue'],
      ['trailing period', 'Fix flaky login test.', 'Fix flaky login test'],
      ['inner whitespace', 'Fix \t flaky   login\u00a0test', 'Fix flaky login test'],
      ['multi-line keeps the first line', 'Fix flaky login test\n\nThis title describes the task.', 'Fix flaky login test'],
      ['code fence skipped', '```\nFix flaky login test\n```', 'Fix flaky login test'],
      ['reasoning block skipped', '<think>The user wants\na title</think>\nFix flaky login test', 'Fix flaky login test'],
      ['apostrophes inside kept', "Don't break the user's session", "Don't break the user's session"],
      ['empty', '', undefined],
      ['blank lines only', '  \n \n', undefined],
      ['quotes only', '""', undefined],
      ['markup only', '**  **', undefined],
      ['punctuation only', '...', undefined],
      ['unfinished reasoning only', '<think>still thinking', undefined],
      ['not a string', null, undefined],
      ['an object', { title: 'x' }, undefined],
    ];
    for (const [name, content, expected] of cases) {
      it(`${name}: ${JSON.stringify(content)} → ${JSON.stringify(expected)}`, () => {
        assert.equal(sanitizeGeneratedTitle(content), expected);
      });
    }

    it('cuts a long answer to 80 characters', () => {
      assert.equal(GENERATED_TITLE_MAX_CHARS, 80);
      const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
      const title = sanitizeGeneratedTitle(words)!;
      assert.ok(Array.from(title).length <= 80, title);
      assert.ok(words.startsWith(title));
      assert.equal(title, words.slice(0, 80).trimEnd());
      assert.equal(sanitizeGeneratedTitle('é'.repeat(100)), 'é'.repeat(80));
    });
  });
});
