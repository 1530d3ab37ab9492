/**
 * The built-in driver's workspace tools follow the turn's workspace limits (host settings,
 * docs/agent-admin.md "Host settings"): the command timeout (still bounded by the turn's deadline)
 * and output bound reach the sandbox exec, the read bound reaches the file read; without limits the
 * built-in ones apply.
 */
import assert from 'node:assert/strict';
import { BASH_OUTPUT_BYTES, BASH_TIMEOUT_MS, READ_FILE_MAX_BYTES, runBuiltinTool } from '../../../../activities/agent/builtin-tools';
import type { ExecOptions, SandboxExec } from '../../../../activities/agent/types';

function recordingSandbox(): { sandbox: SandboxExec; execs: ExecOptions[]; reads: number[] } {
  const execs: ExecOptions[] = [];
  const reads: number[] = [];
  const sandbox: SandboxExec = {
    exec: (_command, options) => {
      execs.push(options);
      return Promise.resolve({ exitCode: 0, stdout: 'x'.repeat(10), stderr: '', truncated: true, timedOut: false });
    },
    readFile: (_path, maxBytes) => {
      reads.push(maxBytes);
      return Promise.resolve('content');
    },
    writeFile: () => Promise.resolve(),
  };
  return { sandbox, execs, reads };
}

describe('built-in tools: workspace limits', () => {
  const signal = new AbortController().signal;

  it('bash and read_file use the turn limits', async () => {
    const { sandbox, execs, reads } = recordingSandbox();
    const limits = { commandTimeoutMs: 7000, commandOutputMaxBytes: 2048, fileReadMaxBytes: 5120 };
    const ctx = { sandbox, signal, deadline: Date.now() + 3_600_000, limits };
    const bash = await runBuiltinTool('bash', JSON.stringify({ command: 'true' }), ctx);
    assert.equal(execs[0]?.timeoutMs, 7000);
    assert.equal(execs[0]?.maxOutputBytes, 2048);
    assert.match(bash.output, /beyond 2048 bytes per stream/);
    await runBuiltinTool('read_file', JSON.stringify({ path: 'a.txt' }), ctx);
    assert.deepEqual(reads, [5120]);
  });

  it('the turn deadline still bounds a command, and without limits the built-in ones apply', async () => {
    const { sandbox, execs, reads } = recordingSandbox();
    await runBuiltinTool('bash', JSON.stringify({ command: 'true' }), { sandbox, signal, deadline: Date.now() + 2000, limits: { commandTimeoutMs: 60_000, commandOutputMaxBytes: 1, fileReadMaxBytes: 1 } });
    assert.ok(execs[0]!.timeoutMs <= 2000);
    await runBuiltinTool('bash', JSON.stringify({ command: 'true' }), { sandbox, signal, deadline: Date.now() + 3_600_000 });
    assert.equal(execs[1]?.timeoutMs, BASH_TIMEOUT_MS);
    assert.equal(execs[1]?.maxOutputBytes, BASH_OUTPUT_BYTES);
    await runBuiltinTool('read_file', JSON.stringify({ path: 'a.txt' }), { sandbox, signal, deadline: Date.now() + 3_600_000 });
    assert.deepEqual(reads, [READ_FILE_MAX_BYTES]);
  });
});
