import assert from 'node:assert/strict';
import { createShutdown } from '../../lib/shutdown';
import { captureLogs } from '../support/logs';

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
});
