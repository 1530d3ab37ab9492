/**
 * `api_logs` rows through a real gateway and PostgreSQL: chat (streaming and not), embeddings, an
 * upstream error, fallback attribution, an unknown model, synthetic probes and rejections under
 * their runtime flags, `provider_hourly_stats` increments, and no request log without a database.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { buildBatch } from '../../gateway/request-log/batch';
import { postgresSink } from '../../gateway/request-log/postgres-sink';
import { requestRecord } from '../support/request-log-fakes';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

interface LogRow {
  request_id: string;
  user_id: string | null;
  model: string | null;
  provider: string | null;
  endpoint_id: string | null;
  surface: string;
  status: number;
  stream: boolean;
  latency_ms: number;
  first_token_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cache_read_tokens: number | null;
  num_user_turns: number | null;
  num_tool_calls: number | null;
  cost_usd: string | null;
  error_code: string | null;
  synthetic: boolean;
  user_message_chars: number | null;
  user_message_entropy: number | null;
  user_message_hash: string | null;
  metadata: Record<string, unknown> & { routing?: Record<string, unknown>; client?: Record<string, unknown> };
}

const FAST = { REQUEST_LOG_FLUSH_INTERVAL_MS: '20' };

describe('request log (api_logs)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;
  let counter = 0;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    gw = await startTestGateway({ db: t.db, env: FAST, rng: () => 0, modelsYaml: `models:
  - id: m
    name: M
    pricing: { prompt: "3", completion: "15", input_cache_reads: "0.3" }
    route:
      - { kind: generic_compat, base_url: "${a.url}", api_key: key-a, provider: route-a }
      - { kind: engine_a, base_url: "${b.url}", provider: route-b }
  - { id: e, name: E, model_type: embedding, provider: generic_compat, base_url: "${a.url}" }
` });
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  const nextId = (label: string) => `${label}-${++counter}`;

  function post(path: string, body: unknown, headers: Record<string, string> = {}, target = gw!): Promise<Response> {
    return fetch(`${target.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  }

  /** Waits for the row of a request (rows are written in the background). */
  async function rowOf(requestId: string): Promise<LogRow> {
    return waitFor(() => t.db('api_logs').where({ request_id: requestId }).first<LogRow | undefined>(), `the api_logs row of ${requestId}`);
  }

  const conversation = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: '42' },
    { role: 'user', content: '  aabb  ' },
  ];

  it('logs a non-streaming chat completion with usage, cost, conversation facts and metadata', async () => {
    const id = nextId('chat');
    const res = await post('/v1/chat/completions', { model: 'm', messages: conversation }, {
      'x-request-id': id, 'user-agent': 'claude-cli/1.0.3 (external, cli)', 'x-session-id': 'sess-1', authorization: 'Bearer sk-secret-value',
    });
    assert.equal(res.status, 200);
    const row = await rowOf(id);
    assert.deepEqual([row.model, row.provider, row.surface, row.status, row.stream], ['m', 'route-a', 'chat', 200, false]);
    assert.ok(row.endpoint_id);
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.cache_read_tokens], [12, 5, 4]);
    assert.deepEqual([row.num_user_turns, row.num_tool_calls], [2, 1]);
    assert.equal(Number(row.cost_usd), (8 * 3 + 4 * 0.3 + 5 * 15) / 1e6);
    assert.deepEqual([row.user_message_chars, row.user_message_entropy], [4, 1]);
    assert.match(row.user_message_hash!, /^[0-9a-f]{16}$/);
    assert.equal(row.first_token_ms, null);
    assert.ok(row.latency_ms >= 0);
    assert.equal(row.error_code, null);
    assert.equal(row.user_id, null, 'auth disabled: no user');
    assert.equal(row.metadata.agent, 'claude-cli');
    assert.equal(row.metadata.user_agent, 'claude-cli/1.0.3 (external, cli)');
    assert.equal(row.metadata.session_id, 'sess-1');
    // A loopback peer is no client address (docs/client-address.md): the provenance says so.
    assert.deepEqual(row.metadata.client, { client_ip: 'unknown', peer_ip: '127.0.0.1', source: 'socket', resolved: false, reason: 'peer_not_routable' });
    assert.equal(row.metadata.routing?.provider, 'route-a');
    assert.equal(row.metadata.routing?.endpoint_id, row.endpoint_id);
    assert.ok(!JSON.stringify(row).includes('sk-secret-value'), 'no credential in the row');
  });

  it('logs a streamed completion with its first-token latency and final usage', async () => {
    const id = nextId('stream');
    a.enqueue({ kind: 'sse', pieces: ['a', 'b'], usage: { prompt_tokens: 30, completion_tokens: 2, cached_tokens: 10 } });
    const res = await post('/v1/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { 'x-request-id': id });
    await res.text();
    const row = await rowOf(id);
    assert.equal(row.stream, true);
    assert.equal(row.status, 200);
    assert.ok(row.first_token_ms !== null && row.first_token_ms <= row.latency_ms);
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.cache_read_tokens, row.num_user_turns, row.num_tool_calls], [30, 2, 10, 1, 0]);
    assert.equal(row.metadata.agent, undefined, 'no agent declared');
  });

  it('logs a stream the client abandoned as 499 client_disconnected', async () => {
    const id = nextId('gone');
    a.enqueue({ kind: 'sse', pieces: ['a', 'b', 'c', 'd', 'e', 'f'], intervalMs: 200 });
    const controller = new AbortController();
    const res = await fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, signal: controller.signal,
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const row = await rowOf(id);
    assert.deepEqual([row.status, row.error_code, row.stream, row.provider], [499, 'client_disconnected', true, 'route-a']);
  });

  it('logs embeddings', async () => {
    const id = nextId('embed');
    const res = await post('/v1/embeddings', { model: 'e', input: ['x', 'y'] }, { 'x-request-id': id });
    assert.equal(res.status, 200);
    const row = await rowOf(id);
    assert.deepEqual([row.surface, row.model, row.status, row.prompt_tokens, row.num_user_turns, row.user_message_chars], ['embeddings', 'e', 200, 6, null, null]);
    assert.equal(row.provider, 'generic_compat');
  });

  it('logs fallback attribution, and an upstream failure with its error status', async () => {
    const fell = nextId('fallback');
    a.enqueue({ kind: 'status', status: 503 });
    assert.equal((await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-request-id': fell })).status, 200);
    const fallbackRow = await rowOf(fell);
    assert.equal(fallbackRow.provider, 'route-b');
    assert.equal(fallbackRow.metadata.routing?.fallback, true);
    assert.equal((fallbackRow.metadata.routing?.failed_attempts as unknown[]).length, 1);

    const failed = nextId('failed');
    a.enqueue({ kind: 'status', status: 503 });
    b.enqueue({ kind: 'status', status: 500 });
    assert.equal((await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-request-id': failed })).status, 502);
    const row = await rowOf(failed);
    assert.deepEqual([row.status, row.error_code, row.model, row.provider, row.cost_usd], [502, 'upstream_error', 'm', null, null]);
  });

  it('logs an unknown model as a 404 under the name asked for', async () => {
    const id = nextId('missing');
    assert.equal((await post('/v1/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'x' }] }, { 'x-request-id': id })).status, 404);
    const row = await rowOf(id);
    assert.deepEqual([row.status, row.model, row.provider, row.error_code], [404, 'nope', null, 'model_not_found']);
  });

  it('omits synthetic probes unless log_synthetic_probes is on', async () => {
    const log = gw!.deps.requestLog!;
    const probe = (requestId: string) => {
      const record = requestRecord({ requestId, synthetic: true, caller: { role: 'internal', via: 'api_key', userId: 1, apiKeyId: 2 }, model: 'm' });
      record.end({ headers: {} } as IncomingMessage, { destroyed: false, writableEnded: true, statusCode: 200 } as ServerResponse);
      log.finish(record);
    };
    const omitted = nextId('probe');
    probe(omitted);
    const marker = nextId('after-probe');
    await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-request-id': marker });
    await rowOf(marker); // queued after the probe: once it is stored, the probe would have been too
    assert.equal(await t.db('api_logs').where({ request_id: omitted }).first(), undefined);

    await gw!.deps.siteSettings.write('log_synthetic_probes', true);
    try {
      const kept = nextId('probe');
      probe(kept);
      const row = await rowOf(kept);
      assert.equal(row.synthetic, true);
      assert.equal(row.metadata.synthetic, true);
    } finally {
      await gw!.deps.siteSettings.write('log_synthetic_probes', null);
    }
  });

  it('logs rejected requests only when log_rejected_requests is on, labelled with reason and credential state', async () => {
    const authed = await startTestGateway({ db: t.db, env: { ...FAST, USER_AUTH_ENABLED: 'true' }, modelsYaml: 'models: []\n' });
    try {
      const dropped = nextId('rejected');
      assert.equal((await post('/v1/chat/completions', { model: 'm', messages: [] }, { 'x-request-id': dropped }, authed)).status, 401);
      await authed.deps.siteSettings.write('log_rejected_requests', true);
      const missing = nextId('rejected');
      const invalid = nextId('rejected');
      assert.equal((await post('/v1/chat/completions', { model: 'm', messages: [] }, { 'x-request-id': missing }, authed)).status, 401);
      assert.equal((await post('/v1/chat/completions', { model: 'm', messages: [] }, { 'x-request-id': invalid, authorization: 'Bearer sk-wrong-key' }, authed)).status, 401);
      const missingRow = await rowOf(missing);
      assert.deepEqual([missingRow.status, missingRow.user_id, missingRow.metadata.rejection, missingRow.metadata.credential_state], [401, null, 'missing_api_key', 'missing']);
      const invalidRow = await rowOf(invalid);
      assert.deepEqual([invalidRow.metadata.rejection, invalidRow.metadata.credential_state], ['invalid_api_key', 'unknown']);
      assert.ok(!JSON.stringify(invalidRow).includes('sk-wrong-key'));
      assert.equal(await t.db('api_logs').where({ request_id: dropped }).first(), undefined, 'refused before the flag: not logged');

      const blocked = nextId('blocked');
      assert.equal(authed.deps.requestLog!.logRejection({
        req: { headers: { 'user-agent': 'curl/8' } } as unknown as IncomingMessage, requestId: blocked, path: '/v1/chat/completions', status: 429,
        rejection: { reason: 'ip_blocked', credentialState: 'revoked' },
      }), true);
      const blockedRow = await rowOf(blocked);
      assert.deepEqual([blockedRow.status, blockedRow.error_code, blockedRow.metadata.rejection, blockedRow.metadata.credential_state], [429, 'ip_blocked', 'ip_blocked', 'revoked']);
    } finally {
      await authed.deps.siteSettings.write('log_rejected_requests', null);
      await authed.close();
    }
  });

  it('increments provider_hourly_stats from the rows it stores', async () => {
    const ids = [nextId('stats'), nextId('stats'), nextId('stats')];
    for (const id of ids) await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-request-id': id });
    for (const id of ids) await rowOf(id);
    const logged = await t.db('api_logs').where({ provider: 'route-a', model: 'm', synthetic: false })
      .first<{ n: string; cost: string; latency: string; errors: string }>(t.db.raw('count(*) as n'), t.db.raw('sum(cost_usd) as cost'), t.db.raw('sum(latency_ms) as latency'),
        t.db.raw('count(*) filter (where status >= 400 or error_code is not null) as errors'));
    const stats = await t.db('provider_hourly_stats').where({ provider: 'route-a', model: 'm' })
      .first<{ n: string; cost: string; latency: string; errors: string }>(t.db.raw('sum(requests) as n'), t.db.raw('sum(cost_usd) as cost'), t.db.raw('sum(latency_ms_sum) as latency'), t.db.raw('sum(errors) as errors'));
    assert.ok(Number(logged.n) >= 3);
    assert.deepEqual([stats.n, Number(stats.cost), stats.latency, stats.errors], [logged.n, Number(logged.cost), logged.latency, logged.errors]);
  });

  it('stores text beyond ASCII as sent, and a batch written twice once', async () => {
    const text = 'café — ✓ 😀 𝄞 "quoted" \\ back';
    const requestId = nextId('utf8');
    const batch = await buildBatch([requestRecord({
      at: Date.now(), requestId, path: '/v1/chat/completions', status: 200, latencyMs: 5, firstTokenMs: undefined,
      errorCode: undefined, caller: undefined, model: text, stream: false, routing: { provider: 'p-utf8', base_url: 'http://u/v1', endpoint_id: 'ep-utf8' },
      usage: undefined, pricing: undefined, client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage: text, userAgent: text,
      sessionId: undefined, synthetic: false, rejection: undefined,
    })]);
    const sink = postgresSink(t.db);
    await sink.write(batch);
    await sink.write(batch);
    const rows = await t.db('api_logs').where({ request_id: requestId }).select<LogRow[]>('*');
    assert.equal(rows.length, 1, 'the replayed batch adds nothing');
    assert.equal(rows[0]!.model, text);
    assert.equal(rows[0]!.metadata.user_agent, text);
    assert.equal(rows[0]!.user_message_chars, [...text].length);
    const stats = await t.db('provider_hourly_stats').where({ provider: 'p-utf8' }).first<{ requests: string; model: string }>('requests', 'model');
    assert.deepEqual([stats?.requests, stats?.model], ['1', text]);
  });

  it('purges provider_hourly_stats older than 30 days and keeps the rest', async () => {
    const hourAgo = (days: number) => t.db.raw(`date_trunc('hour', now()) - make_interval(days => ?)`, [days]);
    await t.db('provider_hourly_stats').insert([
      { hour: hourAgo(31), provider: 'old', model: 'm', endpoint_id: 'e', requests: 1 },
      { hour: hourAgo(29), provider: 'kept', model: 'm', endpoint_id: 'e', requests: 1 },
    ]);
    await postgresSink(t.db).purge();
    const providers = (await t.db('provider_hourly_stats').whereIn('provider', ['old', 'kept']).select<Array<{ provider: string }>>('provider')).map((r) => r.provider);
    assert.deepEqual(providers, ['kept']);
  });

  it('has no request log without a database', async () => {
    const plain = await startTestGateway({ modelsYaml: 'models: []\n' });
    try {
      assert.equal(plain.deps.requestLog, undefined);
    } finally {
      await plain.close();
    }
  });
});
