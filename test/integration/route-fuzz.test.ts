/**
 * Bad input on every route (docs/security.md): with credentials that pass each route's guard,
 * every route of the gateway and the control-plane API gets malformed JSON, wrong types, NUL
 * bytes and unpaired surrogates in body fields, path parameters and query values, deep nesting,
 * a huge body and odd methods. No answer may be a 500/502/504 (a 503 only as a named
 * `service_unavailable` for a dependency the test leaves unconfigured), and both processes
 * answer their health check afterwards. Bounded: a few thousand loopback requests.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { insertResidency, postWith } from '../support/agent-grants';
import type { Access, RouteEntry } from '../../lib/http/route-access';
import { createKey, signUpAndLogIn } from '../support/accounts';
import { ADMIN_TOKEN } from '../support/admin';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { rawRequest as send, type RawRequest } from '../support/raw-request';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { methodsToWalk } from '../support/walked-methods';

const DISPATCH = 'fuzz-dispatch-token-of-at-least-32-bytes';
const NUL = 'a\u0000b';
const SURROGATE = 'a\uD800b';

/** Field names the routes read; each is sent alone with a bad value (unknown ones are 400 anyway). */
const FIELDS = [
  'model', 'prompt', 'title', 'repo', 'base_ref', 'env', 'name', 'value', 'email', 'password', 'token', 'ip', 'role', 'permissions',
  'slots', 'messages', 'input', 'content', 'kind', 'user_id', 'job_id', 'provider', 'base_url', 'api_key', 'weight', 'events', 'runtime',
  'slots_total', 'settings', 'reason', 'text', 'answers', 'expires_at', 'required_role', 'route_id', 'key', 'metadata', 'stream',
];

/** Bad values as JSON text (a number beyond double range cannot be written with JSON.stringify). */
const RAW_BAD_VALUES = [
  JSON.stringify(NUL), JSON.stringify(SURROGATE), '1e309', '-1', `{"nested":${JSON.stringify(NUL)}}`, `[${JSON.stringify(SURROGATE)}]`, 'true', JSON.stringify('x'.repeat(70_000)),
];

/** Valid bodies of routes that write text; each string value and key is replaced in turn by a bad one. */
const SAMPLES: Record<string, unknown> = {
  'POST /v1/agent/jobs': { prompt: 'hi', model: 'fuzz-model', repo: null, title: 'a title', env: { A_VAR: 'value' } },
  'POST /v1/agent/jobs/:jobId/turns': { prompt: 'again' },
  'POST /v1/agent/jobs/:jobId/restore': {},
  'PUT /v1/agent/variables/:name': { value: 'secret value' },
  'POST /v1/agent/mcp/connections': { name: 'fuzzed', url: 'https://mcp.example.com/mcp', auth: { type: 'bearer', token: 'a token' }, approval_policy: 'none' },
  'POST /v1/agent/mcp/connections/import': { mcpServers: { fuzzed: { url: 'https://mcp.example.com/mcp', headers: { 'X-Key': 'value' } } } },
  'PUT /v1/agent/mcp/chats/:jobId/bindings': { connections: [], servers: ['fuzzed'] },
  'POST /v1/agent/mcp/connectors': { name: 'a machine' },
  'POST /v1/agent/mcp/relay/call': { tool: 'fuzzed__tool', arguments: { text: 'value' }, tool_use_id: 'call_1' },
  'POST /v1/agent/mcp/relay/mcp': { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fuzzed__tool', arguments: { text: 'value' } } },
  'POST /admin/agent/sandboxes/:groupId/stop': { container_id: 'abcdef0123456789', generation: 1, last_activity_at: '2026-01-01T00:00:00.000Z' },
  'POST /admin/agent/sandboxes/:groupId/archive': { container_id: 'abcdef0123456789', generation: 1 },
  'PUT /admin/agent/runner-hosts/:host/slots': { slots: 4 },
  'POST /admin/agent/servers': { host_id: 'fuzz-host', label: 'rack 1' },
  // Its url is set to the fake upstream's in before(): the proxy routes after it then forward there.
  'POST /admin/agent/database/pgadmin/setup': { url: 'http://127.0.0.1:1', password: 'a long enough password' },
  'PUT /admin/agent/settings': { settings: { workspace_download_max_mib: 64, repo_allowlist: ['acme/repo'], title_generation_enabled: true } },
  'POST /admin/agent/database/query': { table: 'agent_jobs', columns: ['job_id', 'title'], filters: [{ column: 'title', op: 'contains', value: 'x' }], sort: { column: 'created_at', direction: 'desc' }, limit: 10 },
  'PUT /admin/agent/host-settings': { settings: { turn_time_limit_seconds: 900, container_memory_mib: 2048 } },
  'POST /admin/agent/sandboxes/batch': { action: 'stop', items: [{ group_id: 'grp_a', container_id: 'abcdef0123456789', generation: 1, last_activity_at: '2026-01-01T00:00:00.000Z' }] },
  'POST /v1/agent/hosts/:hostId/heartbeat': { slots_total: 2, runtime: 'docker', runner_version: '1.0', capabilities: ['gpu'] },
  'POST /v1/agent/hosts/:hostId/inventory': {
    containers: [{ container_id: 'a'.repeat(64), name: 'sbx-grp_x', group_id: 'grp_x', generation: '1', state: 'running', cpu_percent: 1.5, memory_bytes: 1024, disk_bytes: null }],
  },
  'POST /auth/signup': { email: 'someone@example.com', password: 'a long enough password' },
  'POST /auth/login': { email: 'fuzzer@example.com', password: 'wrong password' },
  'POST /auth/api-keys': { name: 'a key' },
  'PATCH /admin/users/:userId': { role: 'pro' },
  'POST /admin/auth-blocks/clear': { ip: '192.0.2.1' },
  'POST /internal/agent/grants': { user_id: 1, model: 'fuzz-model', kind: 'title' },
  'POST /v1/chat/completions': { model: 'fuzz-model', messages: [{ role: 'user', content: 'hi' }], metadata: { agent: 'x' }, user: 'u' },
  'POST /v1/embeddings': { model: 'fuzz-model', input: 'x' },
  'POST /v1/responses': { model: 'fuzz-model', input: 'hi' },
  'POST /v1/completions': { model: 'fuzz-model', prompt: 'hi' },
  'POST /v1/messages': {
    model: 'fuzz-model', max_tokens: 10, system: 'be brief', metadata: { user_id: 'u' }, stop_sequences: ['END'],
    tools: [{ name: 'bash', description: 'run', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'bash' },
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: false }] },
    ],
  },
  'POST /v1/messages/count_tokens': { model: 'fuzz-model', system: [{ type: 'text', text: 'x' }], messages: [{ role: 'user', content: 'hi' }] },
};

/** Valid queries of routes that read query parameters; each value is replaced in turn by a bad one. */
const QUERY_SAMPLES: Record<string, Record<string, string>> = {
  'GET /admin/agent/audit-log': { category: 'hosts', before: '5', limit: '10' },
  'GET /admin/agent/sandboxes': { state: 'all' },
  'GET /admin/agent/servers': { state: 'all', before: '5', limit: '10' },
  'GET /v1/agent/usage/containers': { days: '30' },
  'GET /v1/agent/usage/containers/daily': { days: '7' },
  'DELETE /v1/agent/jobs/:jobId': { permanent: 'true' },
  'GET /v1/agent/usage/runs': { days: '30' },
};

/** Bad query values, already percent-encoded (NUL, a lone surrogate's bytes, out-of-range and odd numbers). */
const BAD_QUERY_VALUES = ['%00', '%ED%A0%80', '-1e309', '9'.repeat(400), '%5B%5D', '', '0x10', '%205', '1.5'];

/** `sample` with each string value, then each key, replaced by `bad` (one at a time). */
function* spoiled(sample: unknown, bad: string): Generator<unknown> {
  if (typeof sample === 'string') {
    yield bad;
  } else if (Array.isArray(sample)) {
    for (let i = 0; i < sample.length; i++) for (const v of spoiled(sample[i], bad)) yield sample.map((x: unknown, j) => (j === i ? v : x));
  } else if (sample !== null && typeof sample === 'object') {
    const entries = Object.entries(sample);
    for (const [key, value] of entries) {
      for (const v of spoiled(value, bad)) yield { ...sample, [key]: v };
      yield Object.fromEntries(entries.map(([k, x]) => [k === key ? `${key}${bad}` : k, x]));
    }
  }
}

function deeplyNested(depth: number): string {
  return `{"messages":[{"role":"user","content":${'['.repeat(depth)}${']'.repeat(depth)}}],"model":"fuzz-model"}`;
}

describe('bad input on every route (gateway and control-plane API, PostgreSQL)', function () {
  this.timeout(180_000);
  let t: TestDatabase;
  let up: FakeUpstream;
  let gw: TestGateway;
  let api: TestApi;
  const credential = new Map<Access, string | undefined>();
  let hostId = '';

  before(async () => {
    t = await freshDatabase();
    up = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n${chatModelYaml('fuzz-model', [`{ kind: generic_compat, base_url: "${up.url}", input_modalities: [text, image] }`])}`,
      env: {
        USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false',
        GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH, AUTH_FAILURE_BLOCK_THRESHOLD: '1000000',
      },
    });
    api = await startTestApi({
      db: t.db,
      env: { AGENT_SETTINGS_ENCRYPTION_KEY: 'fuzz-settings-encryption-key-of-32-bytes', AGENT_CONTROL_TOKEN_SECRET: 'fuzz-control-token-secret-of-32-bytes!' },
    });
    SAMPLES['POST /admin/agent/database/pgadmin/setup'] = { url: up.url, password: 'a long enough password' };
    const session = await signUpAndLogIn(gw.url, t.db, 'fuzzer@example.com');
    await t.db('users').where({ email: 'fuzzer@example.com' }).update({ permissions: ['agent.use', 'agent.admin'] });
    hostId = 'fuzz-host';
    const { credential: hostCredential } = await enrollHost(t.db, hostId);
    credential.set('public', undefined);
    credential.set('key', `Bearer ${await createKey(gw.url, session)}`);
    credential.set('account', `Bearer ${session.accessToken}`);
    credential.set('credentials', `Bearer ${session.accessToken}`);
    credential.set('owner', `Bearer ${session.accessToken}`);
    credential.set('admin', `Bearer ${ADMIN_TOKEN}`);
    credential.set('operator', `Bearer ${ADMIN_TOKEN}`);
    credential.set('host', `Bearer ${hostCredential}`);
    credential.set('internal', `Bearer ${DISPATCH}`);
    // A running attempt in a live residency, so the tool relay's routes parse what they are sent.
    const owner = await t.db('users').where({ email: 'fuzzer@example.com' }).first<{ id: string }>('id');
    const residency = await insertResidency(t.db, { ownerId: Number(owner.id), model: 'fuzz-model', hostId: 'fuzz-relay-host' });
    const issued = await postWith<{ residency_credential: string }>(`${api.url}/v1/agent/hosts/${residency.hostId}/attempts/${residency.attemptId}/tool-credentials`, {}, residency.hostCredential);
    credential.set('relay', `Bearer ${issued.body.residency_credential}`);
  });
  after(async () => {
    await gw?.close();
    await api?.close();
    await up?.close();
    await t?.drop();
  });

  const fuzz = async (base: string, routes: readonly RouteEntry[]) => {
    const failures: string[] = [];
    let sent = 0;
    const check = async (route: RouteEntry, what: string, options: RawRequest) => {
      const answer = await send(base, { ...options, authorization: credential.get(route.access) });
      sent++;
      const allowed503 = answer.status === 503 && /"code":"(service_unavailable|no_provider_available)"/.test(answer.body);
      if (answer.status >= 500 && !allowed503) failures.push(`${options.method} ${options.path} (${what}): ${answer.status} ${answer.body.slice(0, 160)}`);
    };
    for (const route of routes) {
      if (route.path === '/auth/logout' || route.path === '/auth/refresh') continue; // no body, no parameters
      const plain = route.path.replace(/:(\w+)/g, route.access === 'host' ? hostId : 'x1');
      const withBad = (bad: string) => route.path.replace(/:(\w+)/g, (_m, name: string) => (name === 'hostId' ? hostId : encodeURIComponent(bad)));
      // A route serving every method (the database tool's proxy) gets the battery for the common
      // ones; the rarer ones get the odd-method checks below.
      for (const method of methodsToWalk(route, { rare: false })) {
        if (route.path.includes(':')) {
          await check(route, 'NUL parameter', { method, path: withBad(NUL) });
          await check(route, 'encoded lone surrogate bytes', { method, path: route.path.replace(/:(\w+)/g, (_m, name: string) => (name === 'hostId' ? hostId : '%ED%A0%80')) });
          await check(route, 'long parameter', { method, path: withBad('x'.repeat(5000)) });
        }
        await check(route, 'NUL query', { method, path: `${plain}?q=${encodeURIComponent(NUL)}&limit=%00&cursor=%ED%A0%80&state=%ED%A0%80%00` });
        await check(route, 'wrong-typed query', { method, path: `${plain}?limit=-1e309&days=abc&before=[]&after=${'9'.repeat(400)}` });
        const query = QUERY_SAMPLES[`${method} ${route.path}`];
        if (query !== undefined) {
          for (const name of Object.keys(query)) {
            for (const bad of BAD_QUERY_VALUES) {
              const spoilt = Object.entries(query).map(([k, v]) => `${k}=${k === name ? bad : v}`).join('&');
              await check(route, `query ${name}=${bad.slice(0, 20)}`, { method, path: `${plain}?${spoilt}` });
            }
          }
        }
        if (method === 'GET' || method === 'DELETE') continue;
        for (const body of ['{"a":', '[', 'nul\u0000', '"str"', '123', 'null', '[]', '{}', '{"__proto__":{"x":1}}']) {
          await check(route, `body ${JSON.stringify(body)}`, { method, path: plain, body });
        }
        await check(route, 'not JSON content type', { method, path: plain, body: 'a=b', contentType: 'application/x-www-form-urlencoded' });
        for (const field of FIELDS) {
          for (const bad of RAW_BAD_VALUES) {
            await check(route, `${field}=${bad.slice(0, 20)}`, { method, path: plain, body: `{${JSON.stringify(field)}:${bad}}` });
          }
        }
        const sample = SAMPLES[`${method} ${route.path}`];
        if (sample !== undefined) {
          for (const bad of [NUL, SURROGATE]) {
            for (const body of spoiled(sample, bad)) await check(route, `sample ${JSON.stringify(body).slice(0, 60)}`, { method, path: plain, body: JSON.stringify(body) });
          }
        }
        await check(route, '10,000-deep nesting', { method, path: plain, body: deeplyNested(10_000) });
        await check(route, '65-deep nesting', { method, path: plain, body: deeplyNested(65) });
        await check(route, 'huge body', { method, path: plain, body: Buffer.alloc(8 * 1024 * 1024, 0x20) });
      }
      for (const method of ['TRACE', 'PROPFIND', 'PATCH', 'OPTIONS']) await check(route, 'odd method', { method, path: plain });
    }
    assert.deepEqual(failures, []);
    const covered = [...Object.keys(SAMPLES), ...Object.keys(QUERY_SAMPLES)].filter((key) => routes.some((r) => r.methods.some((m) => `${m} ${r.path}` === key)));
    return { sent, covered };
  };

  it('never answers 5xx on the gateway, and stays up', async () => {
    const { sent, covered } = await fuzz(gw.url, gw.routes);
    assert.ok(sent > 1000);
    assert.equal(covered.length, 12, 'every gateway sample names a served route');
    assert.equal((await send(gw.url, { method: 'GET', path: '/health' })).status, 200);
  });

  it('never answers 5xx on the control-plane API, and stays up', async () => {
    const { sent, covered } = await fuzz(api.url, api.routes);
    assert.ok(sent > 500);
    assert.equal(covered.length, 28, 'every API sample (bodies and queries) names a served route');
    assert.equal((await send(api.url, { method: 'GET', path: '/health' })).status, 200);
  });
});
