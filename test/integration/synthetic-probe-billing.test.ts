/**
 * An honoured `X-Probe: synthetic` request is left out of `api_logs` but billed like any other:
 * its cost counts towards the caller's daily quota, so probes alone can exhaust it (429).
 */
import assert from 'node:assert/strict';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

describe('synthetic probes are billed but not logged', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let probeKey = '';
  let otherKey = '';
  let probeUserId = 0;

  const chat = (key: string, requestId: string, headers: Record<string, string> = {}, model = 'm') => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const probe = (requestId: string, model = 'm') => chat(probeKey, requestId, { 'x-probe': 'synthetic' }, model);

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      // `m`: 0.6 USD per request against a 1 USD daily quota, so the second charged request reaches
      // it. `unpriced` costs nothing: used to wait for the key cache without spending.
      modelsYaml: `models:
  - { id: m, name: M, pricing: { request: "0.6" }, route: [{ kind: generic_compat, base_url: "${upstream.url}", provider: probe-label }] }
  - { id: unpriced, name: U, route: [{ kind: generic_compat, base_url: "${upstream.url}", provider: probe-label }] }
`,
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', USER_DAILY_QUOTA_USD: '1', AUTH_KEY_REFRESH_SECONDS: '0.2' },
    });
    probeKey = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'monitor@example.com'));
    otherKey = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'other@example.com'));
    const monitor = await t.db('users').where({ email: 'monitor@example.com' }).first<{ id: string }>();
    probeUserId = Number(monitor.id);
    await t.db('users').where({ id: monitor.id }).update({ role: 'internal', updated_at: t.db.fn.now() });
    await eventually(async () => (await probe(`warm-up-${Date.now()}`, 'unpriced')).headers.get('x-provider') === 'probe-label', 'the key cache to see the internal role');
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('charges an honoured probe to the daily quota and writes no api_logs row', async () => {
    assert.equal(gw.deps.limits.spentToday(probeUserId), 0, 'nothing spent on the unpriced model');
    const first = await probe('probe-1');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-provider'), 'probe-label');
    const spentAfterFirst = gw.deps.limits.spentToday(probeUserId);
    assert.ok(Math.abs(spentAfterFirst - 0.6) < 1e-9, `one honoured probe costs 0.6 USD of quota, spent ${spentAfterFirst}`);

    // A logged request by another user, flushed after the probe, shows the log has caught up.
    assert.equal((await chat(otherKey, 'logged-after-probe')).status, 200);
    await eventually(async () => (await t.db('api_logs').where({ request_id: 'logged-after-probe' }).first()) !== undefined, 'the later request-log row');
    const probeRows = await t.db('api_logs').whereIn('request_id', ['probe-1']);
    assert.deepEqual(probeRows, [], 'probes are omitted from api_logs');

    const second = await probe('probe-2');
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-provider'), 'probe-label');
    assert.ok(gw.deps.limits.spentToday(probeUserId) >= 1);
    const refused = await probe('probe-3');
    assert.equal(refused.status, 429, 'probes alone exhausted the daily quota');
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /Daily quota of 1 USD reached/);
  });
});
