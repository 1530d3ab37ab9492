/**
 * Reading the prompt-rewrite model's reply (docs/agent-grants.md): which mode a request asks for, the
 * chat body sent, and the refusal (502) of replies that break the JSON shape or the counts.
 */
import assert from 'node:assert/strict';
import { AppError } from '../../lib/errors';
import { parseRewriteReply, rewriteChatBody, wantsQuestions, type RewriteRequest } from '../../agent/prompts/rewrite-model';

const clarify: RewriteRequest = { prompt: 'fix it', model: 'm', clarify: true };
const rewrite: RewriteRequest = { prompt: 'fix it', model: 'm', answers: [{ question: 'Where?', answer: 'main' }] };

function refused(request: RewriteRequest, content: unknown, message: RegExp): void {
  assert.throws(() => parseRewriteReply(request, content), (err: unknown) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 502);
    assert.match(err.message, message);
    return true;
  });
}

describe('prompt rewrite replies', () => {
  it('asks questions only when clarify is set and no answers are given', () => {
    assert.equal(wantsQuestions(clarify), true);
    assert.equal(wantsQuestions({ ...clarify, answers: [] }), true);
    assert.equal(wantsQuestions({ ...clarify, answers: rewrite.answers }), false);
    assert.equal(wantsQuestions({ prompt: 'x', model: 'm' }), false);
  });

  it('sends the model, a JSON-only system prompt and the draft (with answers when rewriting)', () => {
    const body = rewriteChatBody(rewrite) as { model: string; stream: boolean; messages: Array<{ role: string; content: string }> };
    assert.equal(body.model, 'm');
    assert.equal(body.stream, false);
    assert.match(body.messages[0]!.content, /"prompt"/);
    assert.deepEqual(JSON.parse(body.messages[1]!.content), { draft_prompt: 'fix it', answers: rewrite.answers });
    const asking = rewriteChatBody(clarify) as { messages: Array<{ content: string }> };
    assert.match(asking.messages[0]!.content, /"questions"/);
    assert.deepEqual(JSON.parse(asking.messages[1]!.content), { draft_prompt: 'fix it' });
  });

  it('reads 2 to 4 trimmed questions, or one trimmed prompt; one code fence is tolerated', () => {
    assert.deepEqual(parseRewriteReply(clarify, '{"questions": [" a ", "b", "c", "d"]}'), { questions: ['a', 'b', 'c', 'd'] });
    assert.deepEqual(parseRewriteReply(rewrite, '```json\n{"prompt": " do it "}\n```'), { prompt: 'do it' });
    assert.deepEqual(parseRewriteReply(rewrite, `{"prompt": "${'x'.repeat(32_000)}"}`), { prompt: 'x'.repeat(32_000) });
  });

  it('refuses replies that are not JSON objects or break the shape or the counts', () => {
    refused(clarify, undefined, /empty/);
    refused(clarify, '  ', /empty/);
    refused(clarify, 'sure! here are questions', /not valid JSON/);
    refused(clarify, '["a", "b"]', /not a JSON object/);
    refused(clarify, '{"questions": ["a"]}', /1 questions/);
    refused(clarify, '{"questions": ["a", "b", "c", "d", "e"]}', /5 questions/);
    refused(clarify, '{"questions": ["a", ""]}', /non-empty strings/);
    refused(clarify, '{"questions": ["a", 2]}', /non-empty strings/);
    refused(rewrite, '{"questions": ["a", "b"]}', /"prompt" must be/);
    refused(rewrite, `{"prompt": "${'x'.repeat(32_001)}"}`, /32001 characters/);
  });
});
