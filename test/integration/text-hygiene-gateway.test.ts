/**
 * Text hygiene at the gateway's door (docs/security.md), on real PostgreSQL with user auth on:
 * typed fields (API key name, admin bodies) holding a NUL or an unpaired surrogate are a 400
 * naming the field and nothing is stored; on the inference surfaces the logged `model` is refused
 * the same way while message content is forwarded to the upstream unchanged; a 10,000-deep array
 * is a 400 and the process lives on; no log line carries the bad text; and a 20 MB
 * `Connection: close` upload gets its 413 to a client that writes before it reads.
 */
import assert from 'node:assert/strict';
import { findBadText, MAX_JSON_DEPTH } from '../../lib/text';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { createKey, postJson, signUpAndLogIn, type Session } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { sendLargeBody, statusOf } from '../support/raw-http';

const NUL = 'a\u0000b';
const LONE = 'a\ud800b';
const SURFACES = ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings'] as const;

interface ErrorBody { error: { message: string; param: string | null } }

describe('text hygiene: gateway bodies', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let session: Session;
  let key: string;

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}" }`])}`,
      env: { USER_AUTH_ENABLED: 'true', COOKIE_SECURE: 'false', ADMIN_TOKEN, AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1', GATEWAY_MAX_BODY_MIB: '1' },
    });
    session = await signUpAndLogIn(gw.url, t.db, 'hygiene@example.com');
    key = await createKey(gw.url, session);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  const infer = (path: string, body: unknown) => fetch(`${gw.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  /** A minimal valid body of each surface, with `model` and the text in the surface's own field. */
  const bodyOf = (path: string, model: string, text: unknown): Record<string, unknown> => {
    if (path === '/v1/completions') return { model, prompt: text };
    if (path === '/v1/responses') return { model, input: text };
    if (path === '/v1/embeddings') return { model, input: text };
    return { model, messages: [{ role: 'user', content: text }] };
  };
  const count = async (table: string) => Number(((await t.db(table).count<Array<{ count: string }>>('* as count'))[0]!).count);

  async function assertField(res: Response, field: string): Promise<void> {
    const text = await res.text();
    assert.equal(res.status, 400, text);
    const { error } = JSON.parse(text) as ErrorBody;
    assert.equal(error.param, field, text);
    assert.ok(error.message.startsWith(`Invalid field '${field}': must not contain`), text);
  }

  it('refuses a bad API key name with 400 naming it, and issues no key', async () => {
    const keys = await count('api_keys');
    for (const name of [NUL, LONE]) {
      await assertField(await postJson(`${gw.url}/auth/api-keys`, { name }, { authorization: `Bearer ${session.accessToken}` }), 'name');
    }
    assert.equal(await count('api_keys'), keys);
  });

  it('refuses bad text in admin bodies with 400 naming the field, and stores nothing', async () => {
    const definitions = await count('provider_definitions');
    const providerKeys = await count('provider_api_keys');
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['/admin/provider-definitions', { slug: 'my-cloud', base_url: upstream.url, display_name: NUL }, 'display_name'],
      ['/admin/provider-definitions', { slug: 'my-cloud', base_url: upstream.url, api_key: LONE }, 'api_key'],
      ['/admin/provider-keys', { provider: 'generic_compat', api_key: 'sk-0123456789', label: NUL }, 'label'],
    ];
    for (const [path, body, field] of cases) {
      const res = await admin(gw, 'POST', path, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(res.body)}`);
      assert.equal((res.body as unknown as ErrorBody).error.param, field);
    }
    assert.equal(await count('provider_definitions'), definitions);
    assert.equal(await count('provider_api_keys'), providerKeys);
  });

  it('refuses a NUL or unpaired surrogate in the logged model on every surface, before any upstream call', async () => {
    const calls = upstream.requests.length;
    for (const path of SURFACES) {
      for (const model of [`m${NUL}`, `m${LONE}`]) await assertField(await infer(path, bodyOf(path, model, 'hi')), 'model');
    }
    assert.equal(upstream.requests.length, calls);
  });

  it('forwards message content holding a NUL or an unpaired surrogate to the upstream unchanged', async () => {
    const content = `x${NUL}y${LONE}z`;
    const res = await infer('/v1/chat/completions', bodyOf('/v1/chat/completions', 'm', content));
    assert.equal(res.status, 200, await res.clone().text());
    const sent = upstream.requests.at(-1)!.body as { messages: Array<{ content: string }> };
    assert.equal(sent.messages[0]!.content, content);
  });

  it(`refuses a 10,000-deep array on every surface with 400 (bound ${MAX_JSON_DEPTH}), and the gateway lives on`, async () => {
    const deep = `${'['.repeat(10_000)}"x"${']'.repeat(10_000)}`;
    for (const path of SURFACES) {
      const body = JSON.stringify(bodyOf(path, 'm', 'PLACEHOLDER')).replace('"PLACEHOLDER"', deep);
      const res = await infer(path, body);
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text}`);
      assert.match((JSON.parse(text) as ErrorBody).error.message, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
    }
    const chat = await infer('/v1/chat/completions', bodyOf('/v1/chat/completions', 'm', [{ type: 'text', text: 'still here' }]));
    assert.equal(chat.status, 200);
  });

  it('writes no NUL or unpaired surrogate into any log line', () => {
    assert.ok(gw.logs.lines.length > 0);
    assert.equal(findBadText(gw.logs.lines), undefined);
    assert.ok(gw.logs.lines.some((l) => l.msg === "Invalid field 'model': must not contain NUL characters (\\u0000)"), 'the refusals were logged');
  });

  for (const framing of ['declared', 'chunked'] as const) {
    it(`answers a 20 MB Connection: close chat upload (${framing} length) with a 413 the client reads`, async () => {
      const outcome = await sendLargeBody({ url: gw.url, path: '/v1/chat/completions', bytes: 20 * 1024 * 1024, framing, headers: { authorization: `Bearer ${key}` } });
      assert.equal(outcome.error, undefined, `the client was cut off: ${outcome.error} after ${JSON.stringify(outcome.response.slice(0, 80))}`);
      assert.equal(statusOf(outcome.response), 413, outcome.response.slice(0, 200));
      assert.match(outcome.response, /\r\nconnection: close\r\n/i);
      assert.equal((await infer('/v1/chat/completions', bodyOf('/v1/chat/completions', 'm', 'hi'))).status, 200);
    });
  }
});
