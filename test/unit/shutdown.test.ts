import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createShutdown } from '../../lib/shutdown';
import { captureLogs } from '../support/logs';
import { waitFor } from '../support/wait';

/** test/support/shutdown-child.ts as a process, with its parsed log lines and its exit. */
function startChild(): { child: ChildProcess; lines: Array<Record<string, unknown>>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/shutdown-child.ts'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: Array<Record<string, unknown>> = [];
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

describe('graceful shutdown', () => {
  it('runs steps once, in order, bounding each by the grace period and continuing after a failure', async () => {
    const order: string[] = [];
    const { log, lines } = captureLogs();
    const shutdown = createShutdown({ log, graceMs: 100, signals: false });
    shutdown.add({ name: 'http', run: () => { order.push('http'); return Promise.resolve(); } });
    shutdown.add({ name: 'stuck', run: () => new Promise(() => { order.push('stuck'); }) });
    shutdown.add({ name: 'broken', run: () => Promise.reject(new Error('nope')) });
    shutdown.add({ name: 'pool', run: () => { order.push('pool'); return Promise.resolve(); } });
    await Promise.all([shutdown.run('test'), shutdown.run('again')]);
    assert.deepEqual(order, ['http', 'stuck', 'pool']);
    await new Promise((r) => setTimeout(r, 20));
    const failed = lines.filter((l) => l.msg === 'shutdown step failed').map((l) => l.step);
    assert.deepEqual(failed, ['stuck', 'broken']);
  });

  describe('signals (a real process)', function () {
    this.timeout(30_000);
    const has = (lines: Array<Record<string, unknown>>, msg: string) => lines.some((line) => line.msg === msg);

    it('drains once when SIGINT and then SIGTERM arrive (Ctrl-C under npm start), with no second-signal exit', async () => {
      const { child, lines, exited } = startChild();
      await waitFor(() => has(lines, 'ready'), 'the child to be ready', 20_000);
      child.kill('SIGINT');
      await waitFor(() => has(lines, 'shutting down'), 'the drain to start');
      child.kill('SIGTERM');
      await waitFor(() => lines.some((line) => line.signal === 'SIGTERM'), 'the SIGTERM to be seen');
      child.stdin!.end('done\n');
      assert.equal(await exited, 0);
      assert.equal(lines.filter((line) => line.msg === 'shutting down').length, 1);
      assert.ok(has(lines, 'shutdown step done'), 'the drain ran to its end');
      assert.ok(!has(lines, 'second signal: exiting now'));
    });

    it('exits at once on the same signal twice (an impatient second Ctrl-C)', async () => {
      const { child, lines, exited } = startChild();
      await waitFor(() => has(lines, 'ready'), 'the child to be ready', 20_000);
      child.kill('SIGINT');
      await waitFor(() => has(lines, 'shutting down'), 'the drain to start');
      child.kill('SIGINT');
      assert.equal(await exited, 1);
      assert.ok(has(lines, 'second signal: exiting now'));
      assert.ok(!has(lines, 'shutdown step done'), 'the drain was cut short');
    });
  });
});
