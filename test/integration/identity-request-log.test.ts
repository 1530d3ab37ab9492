/**
 * Identity meets the request log (real PostgreSQL): rows name the key's account, honoured probes
 * are omitted unless `log_synthetic_probes`, refusals are labelled with the credential's state
 * under `log_rejected_requests` (a revoked key; a blocked source presenting a valid key), and the
 * daily quota is charged from the route's pricing and seeded from the log at restart.
 */
import assert from 'node:assert/strict';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const ADMIN = { authorization: 'Bearer admin-token-for-tests', 'content-type': 'application/json' };

interface LogRow {
  request_id: string;
  user_id: string | null;
  api_key_id: string | null;
  status: number;
  synthetic: boolean;
  cost_usd: string | null;
  metadata: { rejection?: string; credential_state?: string };
}

describe('identity and the request log (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway | undefined;
  let key: string;
  let userId: number;

  const env = {
    USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN: 'admin-token-for-tests',
    REQUEST_LOG_FLUSH_INTERVAL_MS: '20', USER_DAILY_QUOTA_USD: '0.02', AUTH_FAILURE_BLOCK_THRESHOLD: '2',
    TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32',
  };
  const start = async () => startTestGateway({
    db: t.db, env,
    // 1000 USD per 1M prompt tokens: 0.001 USD per token.
    modelsYaml: `models:
  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}", pricing: { prompt: "1000", completion: "0" } }
  - { id: unpriced, name: Unpriced, provider: generic_compat, base_url: "${upstream.url}" }
`,
  });
  const chat = (authorization: string, headers: Record<string, string> = {}, model = 'm') => fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', 'x-forwarded-for': '8.8.8.8', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const row = async (requestId: string | null): Promise<LogRow | undefined> => t.db('api_logs').where({ request_id: requestId }).first<LogRow | undefined>();
  const settings = (body: unknown) => fetch(`${gw!.url}/admin/settings`, { method: 'PATCH', headers: ADMIN, body: JSON.stringify(body) });

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    upstream.setDefault({ kind: 'json', usage: { prompt_tokens: 9, completion_tokens: 1 } });
    gw = await start();
    key = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'ivan@example.com'));
    userId = Number((await t.db('users').where({ email: 'ivan@example.com' }).first<{ id: string }>()).id);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('records the key’s account and charges the daily quota from the route’s pricing, seeded again after a restart', async () => {
    const first = await chat(`Bearer ${key}`);
    assert.equal(first.status, 200);
    const id = first.headers.get('x-request-id');
    await eventually(async () => (await row(id)) !== undefined, 'the row');
    const logged = (await row(id))!;
    assert.equal(Number(logged.user_id), userId);
    assert.notEqual(logged.api_key_id, null);
    assert.equal(Number(logged.cost_usd), 0.009);
    assert.ok(Math.abs(gw!.deps.limits.spentToday(userId) - 0.009) < 1e-9);

    assert.equal((await chat(`Bearer ${key}`)).status, 200, '0.009 spent of 0.02');
    assert.equal((await chat(`Bearer ${key}`)).status, 200, '0.018 spent: still under');
    const over = await chat(`Bearer ${key}`);
    assert.equal(over.status, 429, '0.027 spent');

    await eventually(async () => Number((await t.db('api_logs').where({ user_id: userId, status: 200 }).count<Array<{ count: string }>>('* as count'))[0]!.count) === 3, 'three rows');
    await gw!.close();
    gw = await start();
    await eventually(async () => (await chat(`Bearer ${key}`)).status === 429, 'the restarted gateway to seed today’s spend from the log');
  });

  it('omits honoured probes unless log_synthetic_probes, and labels refusals under log_rejected_requests', async () => {
    const other = await createKey(gw!.url, await signUpAndLogIn(gw!.url, t.db, 'judy@example.com'));
    await t.db('users').where({ email: 'judy@example.com' }).update({ role: 'internal', updated_at: t.db.fn.now() });
    await eventually(() => Promise.resolve(gw!.deps.keys?.lookup(other)?.role === 'internal'), 'the key cache to see the internal role');

    const probe = await chat(`Bearer ${other}`, { 'x-probe': 'synthetic' }, 'unpriced');
    const plain = await chat(`Bearer ${other}`, {}, 'unpriced');
    await eventually(async () => (await row(plain.headers.get('x-request-id'))) !== undefined, 'the plain row');
    assert.equal(await row(probe.headers.get('x-request-id')), undefined, 'the probe is not logged by default');
    assert.equal((await settings({ log_synthetic_probes: true, log_rejected_requests: true })).status, 200);
    const kept = await chat(`Bearer ${other}`, { 'x-probe': 'synthetic' }, 'unpriced');
    await eventually(async () => (await row(kept.headers.get('x-request-id')))?.synthetic === true, 'the probe row with the flag on');

    const judyKeyId = Number((await t.db('api_keys').join('users', 'users.id', 'api_keys.user_id').where('users.email', 'judy@example.com').first<{ id: string }>('api_keys.id')).id);
    await t.db('api_keys').where({ id: judyKeyId }).update({ revoked_at: t.db.fn.now(), updated_at: t.db.fn.now() });
    await eventually(() => Promise.resolve(gw!.deps.keys?.lookup(other)?.revoked === true), 'the key cache to see the revocation');
    for (let i = 0; i < 2; i += 1) assert.equal((await chat(`Bearer ${other}`, { 'x-forwarded-for': '9.9.9.9' }, 'unpriced')).status, 401);
    const revoked = await chat(`Bearer ${other}`, { 'x-forwarded-for': '9.9.9.9' }, 'unpriced');
    assert.equal(revoked.status, 429, 'two failures from 9.9.9.9 blocked it');
    await eventually(async () => (await row(revoked.headers.get('x-request-id'))) !== undefined, 'the blocked row');
    const blockedRow = (await row(revoked.headers.get('x-request-id')))!;
    assert.deepEqual([blockedRow.status, blockedRow.metadata.rejection, blockedRow.metadata.credential_state], [429, 'ip_blocked', 'revoked']);
    const valid = await chat(`Bearer ${key}`, { 'x-forwarded-for': '9.9.9.9' }, 'unpriced');
    assert.equal(valid.status, 429, 'a valid key from the blocked source');
    await eventually(async () => (await row(valid.headers.get('x-request-id')))?.metadata.credential_state === 'valid', 'the blocked row of a valid key');
    const failures = await t.db('api_logs').whereRaw(`metadata->>'rejection' = 'invalid_api_key'`).select<LogRow[]>('*');
    assert.ok(failures.some((f) => f.metadata.credential_state === 'revoked'), 'the revoked key’s 401 rows are labelled');
  });
});
