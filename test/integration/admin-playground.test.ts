/**
 * The admin playground (docs/inference-surfaces.md "Playground") through a real gateway, real
 * PostgreSQL and real fake upstreams: a chat request goes through the chat path's routing and the
 * answer carries the routing attribution clients never see (a failed first attempt, then the
 * fallback); a pin serves one route with no fallback; only administrators may call it; the call is
 * one `api_logs` row with `surface = 'playground'`.
 */
import assert from 'node:assert/strict';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

type Json = Record<string, unknown>;

const ADMIN_TOKEN = 'admin-token-for-playground-tests';
const MESSAGES = [{ role: 'user', content: 'Say hello' }];

interface Routing {
  model: string | null;
  provider: string | null;
  endpoint_id: string | null;
  pinned: Json | null;
  fallback: boolean;
  failed_attempts: Array<{ endpoint_id: string; provider: string; status: number; upstream_status?: number; error_class: string }>;
  offload: unknown;
}

describe('admin playground (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;

  /** `authorization` '' sends none. */
  const play = (body: Json, authorization = `Bearer ${ADMIN_TOKEN}`): Promise<Response> => fetch(`${gw.url}/admin/playground/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization === '' ? {} : { authorization }) },
    body: JSON.stringify(body),
  });

  before(async () => {
    t = await freshDatabase();
    [a, b] = await startUpstreamPair();
    // With rng 0 the `alpha` route (upstream A) is tried first.
    const yaml = `models:\n${chatModelYaml('duo', [`{ kind: generic_compat, provider: alpha, base_url: "${a.url}" }`, `{ kind: generic_compat, provider: beta, base_url: "${b.url}" }`])}`;
    gw = await startTestGateway({
      db: t.db, modelsYaml: yaml, rng: () => 0,
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN, REQUEST_LOG_FLUSH_INTERVAL_MS: '20' },
    });
  });
  after(async () => {
    await closeAll(gw, a, b);
    await t?.drop();
  });
  beforeEach(() => {
    a.requests.length = 0;
    b.requests.length = 0;
  });

  it('answers the completion with the attribution: a failed first attempt, then the fallback; one api_logs row marked playground', async () => {
    a.enqueue({ kind: 'status', status: 500, message: 'engine crashed' });
    b.enqueue({ kind: 'json', content: 'hello', usage: { prompt_tokens: 3, completion_tokens: 1 } });
    const res = await play({ model: 'duo', messages: MESSAGES, temperature: 0.2 });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { completion: { choices: Array<{ message: { content: string } }>; _routing?: unknown }; routing: Routing };
    assert.equal(body.completion.choices[0]!.message.content, 'hello');
    assert.equal(body.completion._routing, undefined);
    assert.equal(body.routing.model, 'duo');
    assert.equal(body.routing.provider, 'beta');
    assert.equal(body.routing.fallback, true);
    assert.equal(body.routing.pinned, null);
    assert.equal(body.routing.failed_attempts.length, 1);
    assert.equal(body.routing.failed_attempts[0]!.provider, 'alpha');
    assert.equal(body.routing.failed_attempts[0]!.upstream_status, 500, 'what the upstream answered');
    assert.equal(body.routing.failed_attempts[0]!.status, 502, 'what a client would have been answered');
    assert.equal(typeof body.routing.failed_attempts[0]!.error_class, 'string');
    assert.notEqual(body.routing.failed_attempts[0]!.endpoint_id, body.routing.endpoint_id);
    assert.equal(a.requests.length, 1);
    assert.equal((b.requests[0]!.body as Json).temperature, 0.2, 'the chat body goes upstream as on /v1/chat/completions');
    assert.ok(!('pin' in (b.requests[0]!.body as Json)), 'the pin field is the playground\'s own');

    const requestId = res.headers.get('x-request-id');
    assert.ok(requestId);
    const row = async () => t.db('api_logs').where({ request_id: requestId }).first<{ surface: string; status: number; provider: string; endpoint_id: string; prompt_tokens: number; metadata: { via?: string; routing?: { fallback?: boolean } } } | undefined>();
    await eventually(async () => (await row()) !== undefined, 'the playground row');
    const logged = (await row())!;
    assert.equal(logged.surface, 'playground');
    assert.equal(logged.status, 200);
    assert.equal(logged.provider, 'beta');
    assert.equal(logged.endpoint_id, body.routing.endpoint_id);
    assert.equal(logged.prompt_tokens, 3);
    assert.equal(logged.metadata.via, 'admin');
    assert.equal(logged.metadata.routing?.fallback, true);
    assert.equal(Number((await t.db('api_logs').where({ request_id: requestId }).count<Array<{ count: string }>>('* as count'))[0]!.count), 1, 'exactly one row');
  });

  it('honours a pin: the pinned route serves even when another comes first, and a failing pinned route does not fall back', async () => {
    b.enqueue({ kind: 'json', content: 'from beta' });
    const pinned = await play({ model: 'duo', messages: MESSAGES, pin: { provider: 'beta' } });
    assert.equal(pinned.status, 200);
    const served = (await pinned.json()) as { routing: Routing };
    assert.equal(served.routing.provider, 'beta');
    assert.deepEqual(served.routing.pinned, { provider: 'beta' });
    assert.equal(a.requests.length, 0);

    const alpha = (await (await play({ model: 'duo', messages: MESSAGES, pin: { endpoint_id: served.routing.endpoint_id } })).json()) as { routing: Routing };
    assert.equal(alpha.routing.provider, 'beta', 'an endpoint_id pins too');
    b.requests.length = 0;

    a.enqueue({ kind: 'status', status: 500, message: 'engine crashed' });
    const failed = await play({ model: 'duo', messages: MESSAGES, pin: { provider: 'alpha' } });
    assert.equal(failed.status, 502);
    const error = (await failed.json()) as { error: { code: string }; routing: Routing };
    assert.equal(error.error.code, 'upstream_error');
    assert.deepEqual(error.routing.failed_attempts.map((f) => [f.provider, f.upstream_status]), [['alpha', 500]]);
    assert.equal(error.routing.provider, null);
    assert.equal(b.requests.length, 0, 'no fallback from a pinned route');
  });

  it('refuses bad input with a 400 naming the field, nothing sent upstream', async () => {
    const cases: Array<[Json, string]> = [
      [{ model: 'duo', messages: MESSAGES, pin: { provider: 'nobody' } }, 'pin'],
      [{ model: 'duo', messages: MESSAGES, pin: { provider: 'alpha', endpoint_id: 'x' } }, 'pin'],
      [{ model: 'duo', messages: MESSAGES, stream: true }, 'stream'],
      [{ model: 'duo' }, 'messages'],
      [{ messages: MESSAGES }, 'model'],
    ];
    for (const [body, param] of cases) {
      const res = await play(body);
      const error = ((await res.json()) as { error: { param?: string } }).error;
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(error.param, param, JSON.stringify(body));
    }
    assert.equal((await play({ model: 'nope', messages: MESSAGES })).status, 404);
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  it('is for administrators only: 401 without credentials, 403 for a valid non-admin key or access token', async () => {
    const session = await signUpAndLogIn(gw.url, t.db, 'member@example.com');
    const key = await createKey(gw.url, session);
    assert.equal((await play({ model: 'duo', messages: MESSAGES }, '')).status, 401);
    assert.equal((await play({ model: 'duo', messages: MESSAGES }, `Bearer ${key}`)).status, 403);
    assert.equal((await play({ model: 'duo', messages: MESSAGES }, `Bearer ${session.accessToken}`)).status, 403);
    assert.equal(a.requests.length + b.requests.length, 0);
  });
});
