/**
 * Native CLI streams normalized (activities/agent/native-lines.ts): Codex's `exec --json` items and
 * Claude Code's stream-json messages become the event log's kinds with the generic bounds; the
 * session id, final answer and failure are collected; retry notices become `retry` events; garbage
 * becomes a notice and never throws.
 */
import assert from 'node:assert/strict';
import { MAX_EVENT_TEXT_CHARS, type CliLine } from '../../../activities/agent/cli-lines';
import { claudeLine, codexLine, newNativeRun, type NativeRun } from '../../../activities/agent/native-lines';

const lines = (normalize: (split: { line: string }, run: NativeRun) => CliLine[], objects: unknown[], run = newNativeRun()): { events: Array<{ type: string; payload: Record<string, unknown>; isError?: boolean }>; run: NativeRun } => {
  const events = objects.flatMap((obj) => normalize({ line: typeof obj === 'string' ? obj : JSON.stringify(obj) }, run))
    .flatMap((line) => (line.kind === 'event' ? [{ type: line.type, payload: line.payload, ...(line.isError ? { isError: true } : {}) }] : []));
  return { events, run };
};

describe('native CLI streams', () => {
  it('Codex: thread id, a command as tool_use/tool_result, a file change, the last agent message as the answer', () => {
    const { events, run } = lines(codexLine, [
      { type: 'thread.started', thread_id: '01a217b4-7b50-70c3-a891-ba098c43e94c' },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: 'thinking' } },
      { type: 'item.started', item: { id: 'item_1', type: 'command_execution', command: 'bash -lc ls', aggregated_output: '', exit_code: null, status: 'in_progress' } },
      { type: 'item.completed', item: { id: 'item_1', type: 'command_execution', command: 'bash -lc ls', aggregated_output: 'a.txt\n', exit_code: 0, status: 'completed' } },
      { type: 'item.completed', item: { id: 'item_2', type: 'file_change', changes: [{ path: 'hello.txt', kind: 'add' }], status: 'completed' } },
      { type: 'item.completed', item: { id: 'item_3', type: 'command_execution', command: 'false', aggregated_output: '', exit_code: 1, status: 'failed' } },
      { type: 'item.completed', item: { id: 'item_4', type: 'agent_message', text: 'Done: hello.txt written.' } },
      { type: 'turn.completed', usage: { input_tokens: 10, cached_input_tokens: 0, output_tokens: 5 } },
    ]);
    assert.equal(run.sessionId, '01a217b4-7b50-70c3-a891-ba098c43e94c');
    assert.equal(run.result, 'Done: hello.txt written.');
    assert.equal(run.produced, true);
    assert.deepEqual(events.map((e) => `${e.type}:${JSON.stringify(e.payload.tool_name ?? e.payload.role ?? '')}`), [
      'tool_use:"shell"', 'tool_result:"shell"', 'tool_use:"apply_patch"', 'tool_result:"apply_patch"', 'tool_use:"shell"', 'tool_result:"shell"', 'message:"assistant"',
    ]);
    assert.deepEqual(events[0]!.payload.input, { command: 'bash -lc ls' });
    assert.equal(events[1]!.payload.output, 'a.txt\n');
    assert.equal(events[5]!.isError, true, 'a failed command is an error result');
  });

  it('Codex: reconnect notices are retry events with attempt and wait; turn.failed is the failure', () => {
    const { events, run } = lines(codexLine, [
      { type: 'error', message: 'Reconnecting... 2/5 (stream disconnected before completion: 503)' },
      { type: 'error', message: 'something else' },
      { type: 'turn.failed', error: { message: 'unexpected status 401 Unauthorized' } },
    ]);
    assert.deepEqual(events[0], { type: 'retry', payload: { attempt: 2, wait_ms: 400, reason: 'Reconnecting... 2/5 (stream disconnected before completion: 503)', source: 'cli' } });
    assert.equal(events[1]!.type, 'notice');
    assert.equal(run.failure, 'unexpected status 401 Unauthorized');
    assert.equal(run.result, undefined);
    assert.equal(run.produced, false);
  });

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

  it('Claude Code: an error result is the failure, not an answer', () => {
    const { run } = lines(claudeLine, [{ type: 'result', subtype: 'error_during_execution', is_error: true, errors: ['API Error: 404 model not found'] }]);
    assert.equal(run.result, undefined);
    assert.equal(run.failure, 'API Error: 404 model not found');
  });

  it('bounds text, and turns garbage and over-long lines into notices without throwing', () => {
    const long = 'x'.repeat(MAX_EVENT_TEXT_CHARS + 100);
    for (const normalize of [codexLine, claudeLine]) {
      const { events } = lines(normalize, ['not json', '[1,2]', '{"no":"type"}', '', '{"type":"item.completed","item":null}', '{"type":"assistant","message":{"content":"nope"}}']);
      assert.ok(events.every((e) => e.type === 'notice'));
      assert.equal(events.length, 3);
      assert.deepEqual(normalize({ oversized: 5_000_000 }, newNativeRun()).map((l) => l.kind === 'event' && l.payload.kind), ['oversized_line']);
    }
    const codex = lines(codexLine, [{ type: 'item.completed', item: { id: 'i', type: 'agent_message', text: long } }]);
    assert.ok((codex.events[0]!.payload.text as string).length < long.length);
    assert.equal(codex.run.lastText, long, 'the answer itself is not cut');
  });
});
