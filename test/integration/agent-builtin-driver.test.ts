/**
 * The built-in driver against the real fake upstream (as the gateway) and a real container: tool
 * calls run in the sandbox with events in order, history persists between turns, transient
 * gateway failures are retried with a `retry` event, other 4xx fail safely, abort kills the command.
 */
import assert from 'node:assert/strict';
import type Docker from 'dockerode';
import { builtinDriver } from '../../activities/agent/builtin-driver';
import type { SandboxExec } from '../../activities/agent/types';
import { startMemberSandbox, type MemberSandbox } from '../support/member-sandbox';
import { execIn } from '../support/docker';
import { driverInput, recordingSink, TEST_GRANT } from '../support/driver-harness';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { scripted, sentMessages } from '../support/scripted-conversation';
import { waitFor } from '../support/wait';

describe('built-in agent driver', () => {
  let member: MemberSandbox;
  let container: Docker.Container;
  let sandbox: SandboxExec;
  let upstream: FakeUpstream;

  before(async () => {
    member = await startMemberSandbox({ 'agent.test': 'builtin-driver' });
    container = member.container;
    sandbox = member.sandbox;
  });
  after(async () => {
    await member.remove();
  });
  /** True while `pid` is a live process (the test container's init never reaps, so a zombie counts as dead). */
  async function isRunning(pid: string): Promise<boolean> {
    const script = `s=$(cat /proc/${pid}/stat 2>/dev/null) || exit 1; case "$s" in *") Z "*) exit 1;; esac`;
    return (await execIn(container, ['sh', '-c', script])).exitCode === 0;
  }
  beforeEach(async () => {
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await upstream.close();
  });

  it('writes a file with write_file, reads it with bash, and reports each step in order', async () => {
    upstream.enqueue(
      scripted.toolCall('write_file', { path: 'notes/hello.txt', content: 'hi from the agent\n' }, 'call_w'),
      scripted.toolCall('bash', { command: 'cat notes/hello.txt; echo warn >&2' }, 'call_b'),
      scripted.finalText('Wrote and read the file.'),
    );
    const events = recordingSink();
    const out = await builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, sessionDir: `${member.sessionRoot}/job-files` }));

    assert.equal(out.result, 'Wrote and read the file.');
    assert.deepEqual(events.types(), ['tool_use', 'tool_result', 'tool_use', 'tool_result', 'message']);
    const [useWrite, writeResult, useBash, bashResult, message] = events.events;
    assert.deepEqual(useWrite?.payload, { tool_use_id: 'call_w', tool_name: 'write_file', input: { path: 'notes/hello.txt', content: 'hi from the agent\n' } });
    assert.equal(writeResult?.payload.tool_use_id, 'call_w');
    assert.equal(writeResult?.payload.is_error, false);
    assert.equal(useBash?.payload.tool_name, 'bash');
    assert.equal(bashResult?.payload.tool_use_id, 'call_b');
    assert.equal(bashResult?.payload.exit_code, 0);
    assert.match(String(bashResult?.payload.output), /^hi from the agent\n\[stderr\]\nwarn\n\[exit code 0\]$/);
    assert.deepEqual(message?.payload, { role: 'assistant', text: 'Wrote and read the file.' });
    assert.equal((await execIn(container, ['cat', '/workspace/notes/hello.txt'])).output, 'hi from the agent\r\n');

    const requests = upstream.chatRequests();
    assert.equal(requests.length, 3);
    for (const req of requests) {
      assert.equal(req.headers.authorization, `Bearer ${TEST_GRANT}`);
      const body = req.body as { model: string; tools: Array<{ function: { name: string } }> };
      assert.equal(body.model, 'fake-model');
      assert.deepEqual(body.tools.map((t) => t.function.name), ['bash', 'read_file', 'write_file']);
    }
    const second = sentMessages(requests[1]!);
    assert.deepEqual(second.at(-1), { role: 'tool', tool_call_id: 'call_w', content: 'Wrote 18 bytes to notes/hello.txt.' });
    assert.equal(second.at(-2)?.tool_calls?.[0]?.id, 'call_w');
    const third = sentMessages(requests[2]!);
    assert.equal(third.at(-1)?.tool_call_id, 'call_b');
    assert.match(String(third.at(-1)?.content), /hi from the agent/);
  });

  it('answers unknown tools and bad JSON arguments to the model as tool errors', async () => {
    upstream.enqueue(
      scripted.toolCalls([{ name: 'teleport', arguments: {}, id: 'c1' }, { name: 'bash', arguments: '{"command": ', id: 'c2' }, { name: 'read_file', arguments: { path: 'missing.txt' }, id: 'c3' }]),
      scripted.finalText('Understood.'),
    );
    const events = recordingSink();
    const out = await builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, sessionDir: `${member.sessionRoot}/job-bad` }));
    assert.equal(out.result, 'Understood.');
    const results = events.ofType('tool_result');
    assert.deepEqual(results.map((r) => [r.payload.tool_use_id, r.payload.is_error, r.isError]), [['c1', true, true], ['c2', true, true], ['c3', true, true]]);
    const toolMessages = sentMessages(upstream.chatRequests()[1]!).filter((m) => m.role === 'tool');
    assert.match(String(toolMessages[0]?.content), /Unknown tool "teleport"/);
    assert.match(String(toolMessages[1]?.content), /Invalid arguments for bash: not valid JSON/);
    assert.match(String(toolMessages[2]?.content), /Cannot read missing.txt/);
  });

  it('keeps the conversation between turns of one chat in the session directory', async () => {
    const sessionDir = `${member.sessionRoot}/job-history`;
    upstream.enqueue(scripted.finalText('First answer.'), scripted.finalText('Second answer.'));
    await builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events: recordingSink(), sessionDir, prompt: 'first prompt' }));
    const out = await builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events: recordingSink(), sessionDir, prompt: 'second prompt', turnSeq: 2 }));
    assert.equal(out.result, 'Second answer.');
    const sent = sentMessages(upstream.chatRequests()[1]!).map((m) => [m.role, m.content]);
    assert.deepEqual(sent.slice(1), [['user', 'first prompt'], ['assistant', 'First answer.'], ['user', 'second prompt']]);
    assert.equal(sent[0]?.[0], 'system');
    const saved = await execIn(container, ['cat', `${sessionDir}/builtin-session.json`]);
    assert.match(saved.output, /Second answer\./);
  });

  it('retries a 429 after its Retry-After with one retry event, then succeeds', async () => {
    upstream.enqueue({ kind: 'status', status: 429, retryAfter: 1 }, scripted.finalText('After the wait.'));
    const events = recordingSink();
    const out = await builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, sessionDir: `${member.sessionRoot}/job-429` }));
    assert.equal(out.result, 'After the wait.');
    const retries = events.ofType('retry');
    assert.equal(retries.length, 1);
    assert.deepEqual({ ...retries[0]?.payload, reason: undefined }, { attempt: 1, wait_ms: 1000, status: 429, retry_after: 1, reason: undefined });
    assert.match(String(retries[0]?.payload.reason), /HTTP 429/);
    assert.equal(upstream.chatRequests().length, 2);
  });

  it('gives up on connection errors after 15 retries, each a retry event', async () => {
    const closed = await startFakeUpstream();
    await closed.close();
    const events = recordingSink();
    const waits: number[] = [];
    const input = driverInput(sandbox, {
      gatewayUrl: closed.origin, events, sessionDir: `${member.sessionRoot}/job-down`, random: () => 0,
      sleep: (ms) => { waits.push(ms); return Promise.resolve(); },
    });
    await assert.rejects(builtinDriver(input), /The model gateway kept failing \(connection error: ECONNREFUSED\); gave up after 15 retries\./);
    const retries = events.ofType('retry');
    assert.deepEqual(retries.map((r) => r.payload.attempt), Array.from({ length: 15 }, (_, i) => i + 1));
    assert.ok(retries.every((r) => r.payload.status === null));
    assert.deepEqual(waits.slice(0, 7), [500, 1000, 2000, 4000, 8000, 16_000, 32_000]);
  });

  it('stops promptly when aborted while waiting to retry', async () => {
    upstream.enqueue({ kind: 'status', status: 503, retryAfter: 30 });
    const events = recordingSink();
    const controller = new AbortController();
    const running = builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, signal: controller.signal, sessionDir: `${member.sessionRoot}/job-wait` }));
    await waitFor(() => events.ofType('retry').length === 1, 'the retry event');
    assert.equal(events.events[0]?.payload.wait_ms, 30_000);
    controller.abort();
    await assert.rejects(running, { name: 'AbortError' });
    assert.equal(upstream.chatRequests().length, 1);
  });

  it('fails the turn on a 4xx other than 429 with a message that never shows the grant', async () => {
    upstream.enqueue({ kind: 'status', status: 400, message: `grant ${TEST_GRANT} cannot use this model` });
    const events = recordingSink();
    await assert.rejects(
      builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, sessionDir: `${member.sessionRoot}/job-400` })),
      (err: Error) => /HTTP 400/.test(err.message) && /cannot use this model/.test(err.message) && !err.message.includes(TEST_GRANT),
    );
    assert.deepEqual(events.types(), []);
    assert.equal(upstream.chatRequests().length, 1);
  });

  it('stops promptly on abort during a bash call and kills the command', async () => {
    upstream.enqueue(scripted.toolCall('bash', { command: 'sleep 300 & echo $! > /workspace/sleep.pid; wait' }, 'call_sleep'));
    const events = recordingSink();
    const controller = new AbortController();
    const running = builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events, signal: controller.signal, sessionDir: `${member.sessionRoot}/job-abort` }));
    const pid = await waitFor(async () => {
      const read = await execIn(container, ['cat', '/workspace/sleep.pid']);
      return read.exitCode === 0 ? read.output.trim() : undefined;
    }, 'the bash command to start');
    assert.equal(await isRunning(pid), true, 'sleep runs before the abort');
    controller.abort();
    await assert.rejects(running, { name: 'AbortError' });
    await waitFor(async () => !(await isRunning(pid)), 'the sleep to be killed');
    assert.deepEqual(events.types(), ['tool_use']);
  });
});
