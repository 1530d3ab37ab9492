import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { infoSoon, redactSecrets } from '../../lib/logger';
import { captureLogs } from '../support/logs';

describe('logger redaction', () => {
  it('replaces credentials and key material wherever they appear', async () => {
    const { log, lines } = captureLogs();
    log.info({
      headers: { authorization: 'Bearer sk-live-1', 'x-api-key': 'k-2', cookie: 'refresh=r-3', 'user-agent': 'ua' },
      req: { headers: { authorization: 'Bearer sk-live-4' } },
      route: { api_key: 'up-5', api_keys: ['up-6'], base_url: 'http://x' },
      user: { password: 'p-7' },
      host: { credential: 'ahc_8' },
      authorization: 'Bearer top-9',
    }, 'request');
    await new Promise((r) => setTimeout(r, 20));
    const text = JSON.stringify(lines);
    for (const secret of ['sk-live-1', 'k-2', 'r-3', 'sk-live-4', 'up-5', 'up-6', 'p-7', 'ahc_8', 'top-9']) {
      assert.ok(!text.includes(secret), `${secret} leaked`);
    }
    assert.ok(text.includes('http://x') && text.includes('"user-agent":"ua"'), 'other fields stay');
  });
});

describe('redactSecrets', () => {
  it('returns the same object when nothing is secret, and copies only the path to a secret', () => {
    const clean = { a: 1, nested: { b: 'x' } };
    assert.equal(redactSecrets(clean), clean);
    const sibling = { keep: true };
    const dirty = { sibling, deep: { headers: { Authorization: 'Bearer s' } } };
    const out = redactSecrets(dirty) as { sibling: unknown; deep: { headers: { Authorization: string } } };
    assert.equal(out.deep.headers.Authorization, '***');
    assert.equal(out.sibling, sibling, 'untouched branches are shared, not copied');
    assert.equal(dirty.deep.headers.Authorization, 'Bearer s', 'the caller object is not mutated');
  });
});

describe('deferred info lines (infoSoon)', () => {
  it('writes after the current turn, in call order, after lines logged directly, stamped with the call time', async () => {
    const { log, lines } = captureLogs('soon', 'info');
    const calledFrom = Date.now();
    infoSoon(log, { event: 'first', n: 1 }, 'first');
    infoSoon(log, { event: 'second', n: 2 }, 'second');
    const calledUntil = Date.now();
    log.info({ event: 'direct' }, 'direct');
    // Let the clock move on before the deferred lines are written: their time must not follow it.
    while (Date.now() < calledUntil + 20) { /* spin */ }
    assert.deepEqual(lines.map((l) => l.event), ['direct'], 'deferred lines wait for the turn to end');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(lines.map((l) => l.event), ['direct', 'first', 'second']);
    for (const line of lines.slice(1)) {
      assert.equal(line.level, 'info');
      const stamped = Date.parse(line.time as string);
      assert.ok(stamped >= calledFrom && stamped <= calledUntil, `stamped when infoSoon was called, not when written (${String(line.time)})`);
    }
    log.info({ event: 'after' }, 'after');
    assert.ok(Date.parse(lines[3]!.time as string) >= calledUntil + 20, 'lines logged afterwards carry the current time again');
  });

  it('are written when the process exits through process.exit before the turn ends', () => {
    const logger = resolve(__dirname, '../../lib/logger.ts');
    const script = `
      const { createLogger, infoSoon } = require(${JSON.stringify(logger)});
      const log = createLogger({ name: 'exit-test', level: 'info' });
      for (let i = 0; i < 3; i += 1) infoSoon(log, { event: 'deferred', n: i }, 'deferred');
      process.exit(0);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    const events = out.trimEnd().split('\n').map((line) => JSON.parse(line) as { event: string; n: number });
    assert.deepEqual(events.map((e) => [e.event, e.n]), [['deferred', 0], ['deferred', 1], ['deferred', 2]]);
  });
});
