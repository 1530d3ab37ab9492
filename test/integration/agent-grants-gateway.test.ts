/**
 * Inference grants at the gateway (real PostgreSQL, real gateways, a fake upstream): the dispatch
 * endpoints (token, validation, issue, rotation, renew, revoke) and `Bearer agr_…` on the
 * inference surfaces (owner charged and logged, one model only, no probes, revocation, expiry,
 * and a second gateway replica on the same database).
 */
import assert from 'node:assert/strict';
import { hashSecret } from '../../lib/crypto';
import { AffinityTable } from '../../gateway/routing/affinity';
import { DISPATCH_TOKEN, dispatch, insertOwner, messageOf } from '../support/agent-grants';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

interface Issued {
  grant_id: string;
  token: string;
  expires_at: string;
  model: string;
}

describe('inference grants at the gateway', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let replica: TestGateway;
  let owner: number;
  let attempt = 0;

  const models = () => `models:
  - { id: m, name: M, aliases: [m-alias], provider: generic_compat, base_url: "${upstream.url}", pricing: { prompt: "1000", completion: "0" } }
  - { id: other, name: Other, provider: generic_compat, base_url: "${upstream.url}" }
  - { id: emb, name: Emb, model_type: embedding, provider: generic_compat, base_url: "${upstream.url}" }
`;
  const env = {
    USER_AUTH_ENABLED: 'true', GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN, AUTH_KEY_REFRESH_SECONDS: '0.2',
    USER_DAILY_QUOTA_USD: '100', REQUEST_LOG_FLUSH_INTERVAL_MS: '20',
  };
  const chat = (url: string, token: string, model = 'm', headers: Record<string, string> = {}) => fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const issueTurn = async (extra: Record<string, unknown> = {}, url = gw.url): Promise<Issued> => {
    attempt += 1;
    const res = await dispatch<Issued>(url, '', { user_id: owner, model: 'm', kind: 'turn', job_id: 'job_a', attempt_id: `att_${attempt}`, host_id: 'h1', ...extra });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({ db: t.db, modelsYaml: models(), env });
    replica = await startTestGateway({ db: t.db, modelsYaml: models(), env });
    owner = await insertOwner(t.db, 'owner@example.com', { role: 'admin' });
  });
  after(async () => {
    await replica?.close();
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('guards dispatch: 401 without or with a wrong token, 503 when unset, 500 without a database', async () => {
    const body = { user_id: owner, model: 'm', kind: 'turn', job_id: 'j', attempt_id: 'a' };
    assert.equal((await dispatch(gw.url, '', body, null)).status, 401);
    const wrong = await dispatch(gw.url, '', body, `${DISPATCH_TOKEN}x`);
    assert.equal(wrong.status, 401);
    assert.equal(messageOf(wrong), 'Invalid grant dispatch token');
    assert.equal((await dispatch(gw.url, '/grant_a/renew', {}, 'nope')).status, 401);
    const unset = await startTestGateway({ db: t.db, modelsYaml: models(), env: { ...env, GATEWAY_GRANT_DISPATCH_TOKEN: '' } });
    const noDb = await startTestGateway({ modelsYaml: models(), env });
    try {
      for (const path of ['', '/grant_a/renew', '/grant_a/revoke']) {
        const refused = await dispatch(unset.url, path, body);
        assert.equal(refused.status, 503);
        assert.equal(messageOf(refused), 'Grant dispatch is not configured');
        const missing = await dispatch(noDb.url, path, body);
        assert.equal(missing.status, 500);
        assert.equal(messageOf(missing), 'Database not configured');
      }
    } finally {
      await unset.close();
      await noDb.close();
    }
    assert.equal(await t.db('agent_grants').count<Array<{ count: string }>>('* as count').then((r) => Number(r[0]!.count)), 0);
  });

  it('validates issue bodies: fields, model in the registry, owner active', async () => {
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ user_id: owner, model: 'm', kind: 'turn', job_id: 'j' }, 400, /attempt_id/],
      [{ user_id: owner, model: 'm', kind: 'prompt_rewrite', operation_id: 'rewrite-1' }, 400, /operation_id/],
      [{ user_id: owner, model: 'm', kind: 'other' }, 400, /kind/],
      [{ user_id: owner, model: 'm', kind: 'turn', job_id: 'j', attempt_id: 'a', extra: 1 }, 400, /extra/],
      [{ user_id: owner, model: 'missing', kind: 'turn', job_id: 'j', attempt_id: 'a' }, 404, /missing/],
      [{ user_id: 999_999, model: 'm', kind: 'turn', job_id: 'j', attempt_id: 'a' }, 404, /User/],
    ];
    for (const [body, status, message] of cases) {
      const res = await dispatch(gw.url, '', body);
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.match(messageOf(res), message);
    }
    const suspended = await insertOwner(t.db, 'suspended@example.com');
    await t.db('users').where({ id: suspended }).update({ suspended_at: t.db.fn.now() });
    const res = await dispatch(gw.url, '', { user_id: suspended, model: 'm', kind: 'turn', job_id: 'j', attempt_id: 'a' });
    assert.equal(res.status, 409);
    assert.match(messageOf(res), /suspended/);
  });

  it('issues a turn grant (token stored hashed) that calls the model as its owner, charged and logged to them', async () => {
    const issued = await issueTurn();
    assert.equal(issued.grant_id, `grant_att_${attempt}`);
    assert.match(issued.token, /^agr_[A-Za-z0-9_-]{43}$/);
    assert.equal(issued.model, 'm');
    assert.ok(Date.parse(issued.expires_at) > Date.now() + 200_000, 'default lifetime AGENT_GRANT_TTL_SECONDS (300 s)');
    const row = await t.db('agent_grants').where({ grant_id: issued.grant_id }).first<Record<string, unknown>>();
    assert.equal(row?.token_hash, hashSecret(issued.token));
    assert.ok(issued.token.startsWith(String(row?.token_prefix)));
    assert.ok(!JSON.stringify(row).includes(issued.token));

    const spentBefore = gw.deps.limits.spentToday(owner);
    const res = await chat(gw.url, issued.token, 'm-alias', { 'x-request-id': 'grant-chat-1', 'x-probe': 'synthetic' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('x-provider'), null, 'X-Probe: synthetic is never honoured for a grant, even of an admin');
    assert.ok(gw.deps.limits.spentToday(owner) > spentBefore, 'the owner’s daily quota is charged');
    assert.notEqual(gw.deps.routing.affinity.lookup(AffinityTable.key(`grant:${issued.grant_id}`, 'm')), undefined, 'the caller is pinned as grant:<grant_id>');
    const logged = await waitFor(() => t.db('api_logs').where({ request_id: 'grant-chat-1' }).first<{ user_id: string; api_key_id: string | null; synthetic: boolean; metadata: Record<string, unknown> }>(), 'the request-log row');
    assert.equal(Number(logged.user_id), owner);
    assert.equal(logged.api_key_id, null);
    assert.equal(logged.synthetic, false);
    assert.equal(logged.metadata.via, 'agent_grant');
    assert.equal(logged.metadata.grant_id, issued.grant_id);
  });

  it('allows only the granted model (403 naming it), on chat and embeddings', async () => {
    const { token } = await issueTurn();
    const other = await chat(gw.url, token, 'other');
    assert.equal(other.status, 403);
    assert.match(((await other.json()) as { error: { message: string } }).error.message, /allows only model 'm'/);
    const embeddings = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'emb', input: 'x' }),
    });
    assert.equal(embeddings.status, 403);
    assert.match(((await embeddings.json()) as { error: { message: string } }).error.message, /allows only model 'm'/);
  });

  it('serves the messages surface with a grant (X-Api-Key or Bearer): charged and logged to the owner, one model, errors in the messages shape', async () => {
    const issued = await issueTurn();
    const messages = (token: string, model: string, header: 'x-api-key' | 'authorization', requestId: string, path = '/v1/messages') => fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { [header]: header === 'authorization' ? `Bearer ${token}` : token, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-request-id': requestId },
      body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const spentBefore = gw.deps.limits.spentToday(owner);
    const viaKey = await messages(issued.token, 'm', 'x-api-key', 'grant-messages-1');
    assert.equal(viaKey.status, 200, await viaKey.clone().text());
    assert.equal(((await viaKey.json()) as { type: string }).type, 'message');
    assert.ok(gw.deps.limits.spentToday(owner) > spentBefore, 'the owner’s daily quota is charged');
    const viaBearer = await messages(issued.token, 'm', 'authorization', 'grant-messages-2');
    assert.equal(viaBearer.status, 200);
    const logged = await waitFor(() => t.db('api_logs').where({ request_id: 'grant-messages-1' }).first<{ user_id: string; api_key_id: string | null; metadata: Record<string, unknown> }>(), 'the request-log row');
    assert.equal(Number(logged.user_id), owner);
    assert.equal(logged.api_key_id, null);
    assert.equal(logged.metadata.grant_id, issued.grant_id);

    const other = await messages(issued.token, 'other', 'x-api-key', 'grant-messages-3');
    assert.equal(other.status, 403);
    const refusal = (await other.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(refusal.type, 'error');
    assert.equal(refusal.error.type, 'permission_error');
    assert.match(refusal.error.message, /allows only model 'm'/);
    const count = await messages(issued.token, 'm', 'x-api-key', 'grant-count-1', '/v1/messages/count_tokens');
    assert.equal(count.status, 200, await count.clone().text());
    assert.ok(((await count.json()) as { input_tokens: number }).input_tokens > 0);

    assert.equal((await dispatch(gw.url, `/${issued.grant_id}/revoke`, {})).status, 200);
    const revoked = await messages(issued.token, 'm', 'x-api-key', 'grant-messages-4');
    assert.equal(revoked.status, 401);
    assert.equal(((await revoked.json()) as { error: { type: string } }).error.type, 'authentication_error');
  });

  it('refuses unknown and revoked grants with 401; revoking is idempotent, unknown grants 404', async () => {
    assert.equal((await chat(gw.url, 'agr_unknownunknownunknownunknownunknownunknown1')).status, 401);
    const issued = await issueTurn();
    assert.equal((await chat(gw.url, issued.token)).status, 200);
    assert.deepEqual((await dispatch(gw.url, `/${issued.grant_id}/revoke`, {})).body, { grant_id: issued.grant_id, revoked: true });
    assert.equal((await chat(gw.url, issued.token)).status, 401);
    assert.equal((await dispatch(gw.url, `/${issued.grant_id}/revoke`, {})).status, 200);
    assert.equal((await dispatch(gw.url, '/grant_nothing/revoke', {})).status, 404);
    const renew = await dispatch(gw.url, `/${issued.grant_id}/renew`, {});
    assert.equal(renew.status, 409);
    assert.match(messageOf(renew), /revoked/);
    const again = await dispatch(gw.url, '', { user_id: owner, model: 'm', kind: 'turn', job_id: 'job_a', attempt_id: `att_${attempt}` });
    assert.equal(again.status, 409, 'a revoked grant is never issued again');
  });

  it('renews a turn grant, never a prompt-rewrite grant; unknown grants 404', async () => {
    const issued = await issueTurn({ ttl_seconds: 60 });
    assert.ok(Date.parse(issued.expires_at) < Date.now() + 61_000);
    const renewed = await dispatch<{ grant_id: string; expires_at: string }>(gw.url, `/${issued.grant_id}/renew`, { ttl_seconds: 600 });
    assert.equal(renewed.status, 200);
    assert.ok(Date.parse(renewed.body.expires_at) > Date.parse(issued.expires_at) + 400_000);
    assert.equal((await dispatch(gw.url, '/grant_nothing/renew', {})).status, 404);
    const rewrite = await dispatch<Issued>(gw.url, '', { user_id: owner, model: 'm', kind: 'prompt_rewrite', operation_id: 'prompt-rewrite-1', ttl_seconds: 3600 });
    assert.equal(rewrite.status, 201);
    const lifetime = Date.parse(rewrite.body.expires_at) - Date.now();
    assert.ok(lifetime > 100_000 && lifetime <= 121_000, `prompt-rewrite grants last 120 s (got ${lifetime} ms)`);
    const refused = await dispatch(gw.url, `/${rewrite.body.grant_id}/renew`, {});
    assert.equal(refused.status, 409);
    assert.match(messageOf(refused), /never renewed/);
  });

  it('refuses an expired grant with 401 (on this gateway and on a replica) and will not renew it', async () => {
    const issued = await issueTurn();
    assert.equal((await chat(replica.url, issued.token)).status, 200);
    await t.db('agent_grants').where({ grant_id: issued.grant_id }).update({ expires_at: t.db.raw("now() - interval '1 second'"), updated_at: t.db.fn.now() });
    await waitFor(async () => (await chat(gw.url, issued.token)).status === 401, 'the expiry to reach the grant cache');
    await waitFor(async () => (await chat(replica.url, issued.token)).status === 401, 'the expiry to reach the replica');
    const renew = await dispatch(gw.url, `/${issued.grant_id}/renew`, {});
    assert.equal(renew.status, 409);
    assert.match(messageOf(renew), /expired/);
  });

  it('rotates the token when the same attempt is issued again: same grant id, old token refused', async () => {
    const first = await issueTurn();
    const second = await dispatch<Issued>(gw.url, '', { user_id: owner, model: 'm', kind: 'turn', job_id: 'job_a', attempt_id: `att_${attempt}`, host_id: 'h1' });
    assert.equal(second.status, 201);
    assert.equal(second.body.grant_id, first.grant_id);
    assert.notEqual(second.body.token, first.token);
    assert.equal((await chat(gw.url, first.token)).status, 401);
    assert.equal((await chat(gw.url, second.body.token)).status, 200);
    const conflicting = await dispatch(gw.url, '', { user_id: owner, model: 'other', kind: 'turn', job_id: 'job_a', attempt_id: `att_${attempt}` });
    assert.equal(conflicting.status, 409);
  });

  it('honours a grant issued by another replica at once, and its revocation within the refresh', async () => {
    const issued = await issueTurn({}, replica.url);
    assert.equal((await chat(gw.url, issued.token)).status, 200, 'a cache miss looks the grant up once');
    assert.equal((await dispatch(replica.url, `/${issued.grant_id}/revoke`, {})).status, 200);
    await waitFor(async () => (await chat(gw.url, issued.token)).status === 401, 'the revocation to reach the other gateway');
  });

  it('refuses the grant of an owner suspended after issue', async () => {
    const suspended = await insertOwner(t.db, 'later-suspended@example.com');
    const res = await dispatch<Issued>(gw.url, '', { user_id: suspended, model: 'm', kind: 'turn', job_id: 'j', attempt_id: 'att_susp' });
    assert.equal(res.status, 201);
    assert.equal((await chat(gw.url, res.body.token)).status, 200);
    await t.db('users').where({ id: suspended }).update({ suspended_at: t.db.fn.now(), updated_at: t.db.fn.now() });
    await waitFor(async () => (await chat(gw.url, res.body.token)).status === 401, 'the suspension to reach the grant cache');
  });
});
