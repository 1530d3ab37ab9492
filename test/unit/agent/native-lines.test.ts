/**
 * Native CLI streams normalized (activities/agent/native-lines.ts): Claude Code's stream-json
 * messages become the event log's kinds with the generic bounds; the
 * session id, final answer and failure are collected; retry notices become `retry` events; garbage
 * becomes a notice and never throws.
 */
import assert from 'node:assert/strict';
import { MAX_EVENT_TEXT_CHARS, type CliLine } from '../../../activities/agent/cli-lines';
import { claudeLine, newNativeRun, type NativeRun } from '../../../activities/agent/native-lines';

const lines = (normalize: (split: { line: string }, run: NativeRun) => CliLine[], objects: unknown[], run = newNativeRun()): { events: Array<{ type: string; payload: Record<string, unknown>; isError?: boolean }>; run: NativeRun } => {
  const events = objects.flatMap((obj) => normalize({ line: typeof obj === 'string' ? obj : JSON.stringify(obj) }, run))
    .flatMap((line) => (line.kind === 'event' ? [{ type: line.type, payload: line.payload, ...(line.isError ? { isError: true } : {}) }] : []));
  return { events, run };
};

describe('native CLI streams', () => {
  it('Claude Code: session id, text and tool_use blocks, tool results with their names, api_retry, the result', () => {
    const { events, run } = lines(claudeLine, [
      { type: 'system', subtype: 'init', session_id: '6f1b3c2e-1111-4222-8333-944455556666', tools: ['Write'], model: 'm' },
      { type: 'system', subtype: 'api_retry', attempt: 1, max_retries: 10, retry_delay_ms: 523.4, error_status: 529, error: 'overloaded_error' },
      { type: 'assistant', message: { content: [{ type: 'thinking', thinking: 'hm' }, { type: 'text', text: 'Writing it.' }, { type: 'tool_use', id: 'toolu_1', name: 'Write', input: { file_path: '/workspace/a.txt', content: 'x' } }] }, session_id: '6f1b3c2e-1111-4222-8333-944455556666' },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'File created' }], is_error: false }] } },
      { type: 'assistant', message: { content: [{ type: 'text', text: 'All done.' }] } },
      { type: 'result', subtype: 'success', is_error: false, result: 'All done.', session_id: '6f1b3c2e-1111-4222-8333-944455556666', num_turns: 2 },
    ]);
    assert.equal(run.sessionId, '6f1b3c2e-1111-4222-8333-944455556666');
    assert.equal(run.result, 'All done.');
    assert.deepEqual(events.map((e) => e.type), ['retry', 'message', 'tool_use', 'tool_result', 'message']);
    assert.deepEqual(events[0]!.payload, { attempt: 1, wait_ms: 523, reason: 'overloaded_error', source: 'cli' });
    assert.equal(events[3]!.payload.tool_name, 'Write');
    assert.equal(events[3]!.payload.output, 'File created');
  });

  it('Claude Code: a call of the tool relay\'s MCP tools is not reported (the relay records it once); other tools are', () => {
    const { events, run } = lines(claudeLine, [
      { type: 'assistant', message: { content: [{ type: 'tool_use', id: 'toolu_m', name: 'mcp__tools__evhttp__echo', input: { message: 'hi' } }, { type: 'tool_use', id: 'toolu_w', name: 'Write', input: {} }] } },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_m', content: 'Echo: hi' }, { type: 'tool_result', tool_use_id: 'toolu_w', content: 'ok' }] } },
      { type: 'assistant', message: { content: [{ type: 'tool_use', id: 'toolu_o', name: 'mcp__other__x', input: {} }] } },
    ]);
    assert.deepEqual(events.map((e) => `${e.type}:${String(e.payload.tool_name)}`), ['tool_use:Write', 'tool_result:Write', 'tool_use:mcp__other__x']);
    assert.equal(run.produced, true);
  });

  it('Claude Code: an error result is the failure, not an answer', () => {
    const { run } = lines(claudeLine, [{ type: 'result', subtype: 'error_during_execution', is_error: true, errors: ['API Error: 404 model not found'] }]);
    assert.equal(run.result, undefined);
    assert.equal(run.failure, 'API Error: 404 model not found');
  });

  it('bounds text, and turns garbage and over-long lines into notices without throwing', () => {
    const long = 'x'.repeat(MAX_EVENT_TEXT_CHARS + 100);
    const { events } = lines(claudeLine, ['not json', '[1,2]', '{"no":"type"}', '', '{"type":"item.completed","item":null}', '{"type":"assistant","message":{"content":"nope"}}']);
    assert.ok(events.every((e) => e.type === 'notice'));
    assert.equal(events.length, 3);
    assert.deepEqual(claudeLine({ oversized: 5_000_000, head: '{"type":"assistant"' }, newNativeRun()).map((l) => l.kind === 'event' && l.payload.kind), ['oversized_line']);
    const claude = lines(claudeLine, [{ type: 'assistant', message: { content: [{ type: 'text', text: long }] } }]);
    assert.ok((claude.events[0]!.payload.text as string).length < long.length);
    assert.equal(claude.run.lastText, long, 'the answer itself is not cut');
  });
});
