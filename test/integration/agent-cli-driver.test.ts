/**
 * The CLI driver with a small scripted "coding CLI" (python3) inside a real container: its
 * JSON-lines stdout becomes normalized events as it streams, a retryable error re-runs it after
 * the retry wait (with AGENT_CLI_RESUME=1), and failures end the turn with a safe message.
 */
import assert from 'node:assert/strict';
import type Docker from 'dockerode';
import { cliDriver } from '../../activities/agent/cli-driver';
import type { SandboxExec } from '../../activities/agent/types';
import { startMemberSandbox, TEST_MEMBER_UID, type MemberSandbox } from '../support/member-sandbox';
import { memberPaths } from '../../activities/docker/sandbox-container';

/** The scripted coding CLI, installed in the member's home (the member runs it). */
const CLI_PATH = `${memberPaths(TEST_MEMBER_UID).home}/fake-cli.py`;
import { execIn } from '../support/docker';
import { driverInput, recordingSink, TEST_GRANT } from '../support/driver-harness';
import { waitFor } from '../support/wait';

/** Fails the first run with a retryable rate limit; later runs report a tool call and a result. */
const FAKE_CLI = String.raw`
import json, os, sys
prompt = sys.stdin.read().strip()
session = os.environ["AGENT_SESSION_DIR"]
os.makedirs(session, exist_ok=True)
runs_file = os.path.join(session, "runs")
runs = int(open(runs_file).read()) if os.path.exists(runs_file) else 0
open(runs_file, "w").write(str(runs + 1))
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
out({"type": "assistant", "text": "Working on: " + prompt})
if runs == 0:
    out({"type": "rate_limited", "retryable": True, "retry_after": int(os.environ.get("FAKE_RETRY_AFTER", "1")), "message": "upstream busy"})
    sys.exit(1)
out({"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "ls"}})
print("this is not json", flush=True)
out({"type": "tool_result", "tool_use_id": "t1", "output": "resume=" + os.environ.get("AGENT_CLI_RESUME", "0"), "is_error": False})
out({"type": "result", "text": "done with " + os.environ["AGENT_MODEL"] + " for " + os.environ["AGENT_JOB_ID"] + " via " + os.environ["AGENT_GATEWAY_URL"] + (" (grant set)" if os.environ["AGENT_GRANT_TOKEN"] else "")})
`;

describe('CLI agent driver', () => {
  let member: MemberSandbox;
  let container: Docker.Container;
  let sandbox: SandboxExec;
  const gatewayUrl = 'http://gateway.test:8080';

  before(async () => {
    member = await startMemberSandbox({ 'agent.test': 'cli-driver' });
    container = member.container;
    sandbox = member.sandbox;
    await sandbox.writeFile(CLI_PATH, FAKE_CLI);
  });
  after(async () => {
    await member.remove();
  });

  it('normalizes the CLI stream, retries a retryable run after retry_after and returns the result', async () => {
    const events = recordingSink();
    const driver = cliDriver({ command: ['python3', CLI_PATH] });
    const out = await driver(driverInput(sandbox, { gatewayUrl, events, prompt: 'fix the bug', sessionDir: `${member.sessionRoot}/cli-1` }));

    assert.equal(out.result, `done with fake-model for job-test-1 via ${gatewayUrl} (grant set)`);
    assert.deepEqual(events.types(), ['message', 'retry', 'message', 'tool_use', 'notice', 'tool_result']);
    assert.deepEqual(events.events[0]?.payload, { role: 'assistant', text: 'Working on: fix the bug' });
    assert.deepEqual(events.events[1]?.payload, { attempt: 1, wait_ms: 1000, retry_after: 1, reason: 'upstream busy' });
    assert.deepEqual(events.events[3]?.payload, { tool_use_id: 't1', tool_name: 'shell', input: { command: 'ls' } });
    assert.equal(events.events[4]?.payload.kind, 'malformed_line');
    assert.equal(events.events[4]?.payload.excerpt, 'this is not json');
    assert.deepEqual(events.events[5]?.payload, { tool_use_id: 't1', tool_name: 'shell', output: 'resume=1', is_error: false, truncated: false });
    assert.equal((await execIn(container, ['cat', `${member.sessionRoot}/cli-1/runs`])).output, '2');
  });

  it('fails without retrying when the CLI asks for a delay above 60 s', async () => {
    const events = recordingSink();
    const driver = cliDriver({ command: ['env', 'FAKE_RETRY_AFTER=120', 'python3', CLI_PATH] });
    await assert.rejects(
      driver(driverInput(sandbox, { gatewayUrl, events, sessionDir: `${member.sessionRoot}/cli-2` })),
      /The coding CLI kept failing \(upstream busy\); the required delay of 120 s exceeds 60 s/,
    );
    assert.deepEqual(events.types(), ['message']);
  });

  it('gives up after 15 retries of a CLI that stays rate limited, re-running it with AGENT_CLI_RESUME=1', async () => {
    const events = recordingSink();
    const script = `echo "$AGENT_CLI_RESUME" >> /tmp/resume-flags; echo '{"type":"rate_limited","message":"still busy"}'; exit 1`;
    const driver = cliDriver({ command: ['bash', '-c', script] });
    const input = driverInput(sandbox, { gatewayUrl, events, sessionDir: `${member.sessionRoot}/cli-6`, random: () => 0, sleep: () => Promise.resolve() });
    await assert.rejects(driver(input), /The coding CLI kept failing \(still busy\); gave up after 15 retries\./);
    assert.deepEqual(events.ofType('retry').map((r) => r.payload.wait_ms), [500, 1000, 2000, 4000, 8000, 16_000, ...Array<number>(9).fill(32_000)]);
    const flags = (await execIn(container, ['cat', '/tmp/resume-flags'])).output.split(/\r?\n/).filter((l, i, all) => i < all.length - 1);
    assert.deepEqual(flags, ['', ...Array<string>(15).fill('1')]);
  });

  it('fails a non-zero exit without a result with the stderr tail, never showing the grant', async () => {
    const driver = cliDriver({ command: ['bash', '-c', 'echo "fatal: cannot start with $AGENT_GRANT_TOKEN" >&2; exit 3'] });
    await assert.rejects(
      driver(driverInput(sandbox, { gatewayUrl, events: recordingSink(), sessionDir: `${member.sessionRoot}/cli-3` })),
      (err: Error) => /exited with code 3 without a result\. stderr: fatal: cannot start with \*\*\*/.test(err.message) && !err.message.includes(TEST_GRANT),
    );
  });

  it('streams events while the CLI runs and stops on abort', async () => {
    const events = recordingSink();
    const controller = new AbortController();
    const driver = cliDriver({ command: ['bash', '-c', `echo '{"type":"assistant","text":"thinking"}'; sleep 300`] });
    const running = driver(driverInput(sandbox, { gatewayUrl, events, signal: controller.signal, sessionDir: `${member.sessionRoot}/cli-5` }));
    await waitFor(() => events.ofType('message').length === 1, 'the streamed message');
    controller.abort();
    await assert.rejects(running, { name: 'AbortError' });
    assert.deepEqual(events.types(), ['message']);
  });

  it('fails on a non-retryable error line with its message', async () => {
    const driver = cliDriver({ command: ['bash', '-c', `echo '{"type":"error","message":"model not allowed"}'`] });
    await assert.rejects(
      driver(driverInput(sandbox, { gatewayUrl, events: recordingSink(), sessionDir: `${member.sessionRoot}/cli-4` })),
      /The coding CLI failed: model not allowed/,
    );
  });
});
