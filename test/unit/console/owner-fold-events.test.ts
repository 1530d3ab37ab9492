/** The owner workspace's pure pieces: folding chat events (tool calls with their results) and the start-chat checks. */
import assert from 'node:assert/strict';
import { foldEvents } from '../../../console/src/owner/fold-events';
import { validateStart } from '../../../console/src/owner/start-validation';
import type { AgentEvent } from '../../../console/src/owner/types';

let id = 0;
function event(event_type: string, payload: Record<string, unknown>, attempt_id: string | null = 'att_1'): AgentEvent {
  id += 1;
  return { event_id: String(id), turn_seq: 1, attempt_id, seq: id, event_type, payload, is_error: false, created_at: '2026-11-28T00:00:00.000Z' };
}

describe('console owner: foldEvents', () => {
  it('folds each tool_use with the tool_result of the same id and attempt into one item, in order', () => {
    const events = [
      event('turn_queued', { turn_id: 'turn_1', prompt: 'Do it' }, null),
      event('tool_use', { tool_use_id: 'a', tool_name: 'bash', input: { command: 'ls' } }),
      event('tool_use', { tool_use_id: 'b', tool_name: 'write_file', input: {} }),
      event('message', { text: 'hi' }),
      event('tool_result', { tool_use_id: 'b', tool_name: 'write_file', output: 'ok', is_error: false }),
      event('tool_result', { tool_use_id: 'a', tool_name: 'bash', output: 'x', is_error: false }),
      event('tool_use', { tool_use_id: 'a', tool_name: 'bash', input: {} }, 'att_2'),
    ];
    const items = foldEvents(events);
    assert.deepEqual(items.map((i) => i.kind), ['turn', 'tool', 'tool', 'event', 'tool']);
    const [turn, bash, write, , retried] = items;
    assert.deepEqual(turn, { kind: 'turn', key: events[0]!.event_id, seq: 1, prompt: 'Do it' });
    assert.ok(bash?.kind === 'tool' && bash.name === 'bash' && bash.result === events[5]);
    assert.ok(write?.kind === 'tool' && write.result === events[4]);
    assert.ok(retried?.kind === 'tool' && retried.result === undefined, 'the same tool id in another attempt is another call, still running');
  });

  it('keeps a result without its call, and a second result of one call, as items of their own', () => {
    const events = [
      event('tool_result', { tool_use_id: 'z', tool_name: 'Read', output: '…' }),
      event('tool_use', { tool_use_id: 'y', tool_name: 'Read', input: {} }),
      event('tool_result', { tool_use_id: 'y', tool_name: 'Read', output: '1' }),
      event('tool_result', { tool_use_id: 'y', tool_name: 'Read', output: '2' }),
    ];
    const items = foldEvents(events);
    assert.equal(items.length, 3);
    assert.ok(items[0]?.kind === 'tool' && items[0].use === undefined && items[0].name === 'Read');
    assert.ok(items[2]?.kind === 'tool' && items[2].result === events[3]);
  });
});

describe('console owner: validateStart', () => {
  const ok = { prompt: 'Add a README', model: 'm', workspace: 'temporary' as const, repo: '' };
  it('accepts a temporary workspace, owner/name and repository URLs', () => {
    assert.deepEqual(validateStart(ok), {});
    assert.deepEqual(validateStart({ ...ok, workspace: 'repository', repo: 'acme/widgets' }), {});
    assert.deepEqual(validateStart({ ...ok, workspace: 'repository', repo: 'https://git.example/acme/widgets' }), {});
  });
  it('names each field it refuses', () => {
    assert.deepEqual(Object.keys(validateStart({ prompt: '  ', model: '', workspace: 'repository', repo: '' })).sort(), ['model', 'prompt', 'repo']);
    assert.match(validateStart({ ...ok, prompt: 'x'.repeat(32_001) }).prompt ?? '', /at most 32000/);
    assert.match(validateStart({ ...ok, workspace: 'repository', repo: 'acme widgets' }).repo ?? '', /owner\/name/);
    assert.deepEqual(validateStart({ ...ok, repo: 'ignored when temporary' }), {});
  });
});
