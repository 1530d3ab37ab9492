import assert from 'node:assert/strict';
import { redactSecrets } from '../../lib/logger';
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
