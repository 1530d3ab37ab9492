/**
 * `POST /v1/chat/completions` through a real gateway to real fake upstreams: the wire body,
 * usage, processors, every fallback path, streaming relay and its failure modes, pins and errors.
 */
import assert from 'node:assert/strict';
import { closeAll, startFakeUpstream, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

interface Completion {
  choices: Array<{ message: { content: string | null; reasoning_content?: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; cache_read_tokens: number | null; prompt_tokens_details: { cached_tokens: number } | null };
  _routing?: unknown;
}

function chat(gw: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], ...body }),
    ...(signal ? { signal } : {}),
  });
}

/** Data payloads of an SSE body. */
function events(text: string): string[] {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

function streamedContent(text: string): string {
  return events(text).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as { choices?: Array<{ delta?: { content?: string } }> })
    .map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
}

describe('chat completions', function () {
  this.timeout(30_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  /** Model `m` with route A (weight 1) then route B (weight `bWeight`); the rng makes A first. */
  async function twoRoutes(options: { bWeight?: number; extraA?: string; extraB?: string; env?: Record<string, string>; modelExtra?: string } = {}): Promise<TestGateway> {
    const yaml = `models:\n${chatModelYaml('m', [
      `{ kind: generic_compat, base_url: "${a.url}", api_key: key-a, provider: route-a${options.extraA ?? ''} }`,
      `{ kind: engine_a, base_url: "${b.url}", weight: ${options.bWeight ?? 1}, provider: route-b${options.extraB ?? ''} }`,
    ], options.modelExtra ?? '')}`;
    gw = await startTestGateway({ modelsYaml: yaml, rng: () => 0, ...(options.env ? { env: options.env } : {}) });
    return gw;
  }

  it('serves a completion: wire body rules, usage with cached tokens, no _routing', async () => {
    await twoRoutes({ modelExtra: '    provider_model_id: org/upstream-m\n    max_output_length: 100\n' });
    a.enqueue({ kind: 'json', content: 'answer', usage: { prompt_tokens: 40, completion_tokens: 3, cached_tokens: 32 }, extra: { _routing: { leaked: true } } });
    const res = await chat(gw!, { model: 'm', max_tokens: 5000, temperature: 0.2, seed: 7, priority: 99, logit_bias: { 1: 2 } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Completion;
    assert.equal(body.choices[0]?.message.content, 'answer');
    assert.equal(body.usage.prompt_tokens_details?.cached_tokens, 32);
    assert.equal(body.usage.cache_read_tokens, 32);
    assert.equal(body._routing, undefined);
    const sent = a.requests[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, 'Bearer key-a');
    const wire = sent.body as Record<string, unknown>;
    assert.equal(wire.model, 'org/upstream-m');
    assert.equal(wire.max_tokens, 100, 'clamped to max_output_length');
    assert.equal(wire.temperature, 0.2);
    for (const dropped of ['seed', 'priority', 'logit_bias']) assert.ok(!(dropped in wire), `${dropped} is not forwarded`);
    assert.equal(b.requests.length, 0);
  });

  it('reports cache_read_tokens null when the upstream gives no details, 0 on null_cache_details_means_miss routes', async () => {
    await twoRoutes({ extraA: ', null_cache_details_means_miss: true' });
    a.enqueue({ kind: 'json', usage: { prompt_tokens: 5, completion_tokens: 1, cached_tokens: null } });
    const miss = (await (await chat(gw!, { model: 'm' })).json()) as Completion;
    assert.equal(miss.usage.cache_read_tokens, 0);
    assert.deepEqual(miss.usage.prompt_tokens_details, { cached_tokens: 0 });
    await gw!.close();
    await twoRoutes();
    a.enqueue({ kind: 'json', usage: { prompt_tokens: 5, completion_tokens: 1 } });
    const unknown = (await (await chat(gw!, { model: 'm' })).json()) as Completion;
    assert.equal(unknown.usage.cache_read_tokens, null);
  });

  it('streams: relays every chunk, final usage chunk carries cached_tokens and prompt_tokens_details', async () => {
    await twoRoutes();
    a.enqueue({ kind: 'sse', pieces: ['é', 'ü', '🙂', ' ok'], byteSlices: 3, usage: { prompt_tokens: 10, completion_tokens: 4, cached_tokens: 8 }, extraEvents: [JSON.stringify({ _routing: { provider: 'x' } })] });
    const res = await chat(gw!, { model: 'm', stream: true });
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const text = await res.text();
    assert.equal(streamedContent(text), 'éü🙂 ok');
    assert.ok(!text.includes('_routing'));
    const data = events(text);
    assert.equal(data.at(-1), '[DONE]');
    const usage = (JSON.parse(data.at(-2)!) as { usage: { cached_tokens: number; prompt_tokens_details: { cached_tokens: number } } }).usage;
    assert.equal(usage.cached_tokens, 8);
    assert.deepEqual(usage.prompt_tokens_details, { cached_tokens: 8 });
    const wire = a.requests[0]!.body as { stream: boolean; stream_options: unknown };
    assert.equal(wire.stream, true);
    assert.deepEqual(wire.stream_options, { include_usage: true });
  });

  for (const [name, failure] of [
    ['a 5xx', { kind: 'status', status: 503 }],
    ['a 429', { kind: 'status', status: 429, retryAfter: 3 }],
    ['a connection reset while reading the body', { kind: 'reset_mid_stream', afterChunks: 0 }],
  ] as const) {
    it(`falls back to the next route on ${name}`, async () => {
      await twoRoutes();
      a.enqueue(failure);
      b.enqueue({ kind: 'json', content: 'from b' });
      const res = await chat(gw!, { model: 'm' });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as Completion).choices[0]?.message.content, 'from b');
      assert.equal(a.requests.length, 1);
      assert.equal(b.requests.length, 1);
    });
  }

  it('falls back on a connect error and on a first-byte timeout', async () => {
    const closed = await startFakeUpstream();
    const deadUrl = closed.url;
    await closed.close();
    const yaml = `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${deadUrl}" }`, `{ kind: generic_compat, base_url: "${b.url}" }`])}`;
    gw = await startTestGateway({ modelsYaml: yaml, rng: () => 0 });
    assert.equal((await chat(gw, { model: 'm' })).status, 200);
    await gw.close();
    await twoRoutes({ env: { UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS: '0.3' } });
    a.enqueue({ kind: 'slow_first_byte', delayMs: 2000, then: { kind: 'json' } });
    b.enqueue({ kind: 'json', content: 'fast' });
    const res = await chat(gw, { model: 'm' });
    assert.equal(((await res.json()) as Completion).choices[0]?.message.content, 'fast');
  });

  it('answers 504 when every route times out', async () => {
    await twoRoutes({ env: { UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS: '0.2' } });
    a.setDefault({ kind: 'slow_first_byte', delayMs: 2000, then: { kind: 'json' } });
    b.setDefault({ kind: 'slow_first_byte', delayMs: 2000, then: { kind: 'json' } });
    const res = await chat(gw!, { model: 'm' });
    assert.equal(res.status, 504);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'gateway_timeout');
  });

  it('surfaces an upstream 401 without fallback and logs upstream_auth_misconfig', async () => {
    await twoRoutes();
    a.enqueue({ kind: 'status', status: 401 });
    const res = await chat(gw!, { model: 'm' });
    assert.equal(res.status, 401);
    const body = (await res.json()) as { error: { message: string } };
    assert.doesNotMatch(body.error.message, /key-a/);
    assert.equal(b.requests.length, 0);
    assert.ok(gw!.logs.lines.some((l) => l.event === 'upstream_auth_misconfig' && l.provider === 'route-a'));
  });

  it('after a context-length refusal skips routes whose context_length is not wider', async () => {
    const c = await startFakeUpstream();
    try {
      const yaml = `models:\n${chatModelYaml('m', [
        `{ kind: generic_compat, base_url: "${a.url}", context_length: 8192 }`,
        `{ kind: generic_compat, base_url: "${b.url}", context_length: 8192 }`,
        `{ kind: generic_compat, base_url: "${c.url}", context_length: 131072 }`,
      ])}`;
      gw = await startTestGateway({ modelsYaml: yaml, rng: () => 0 });
      a.enqueue({ kind: 'context_length', contextLength: 8192 });
      c.enqueue({ kind: 'json', content: 'wide' });
      const res = await chat(gw, { model: 'm' });
      assert.equal(((await res.json()) as Completion).choices[0]?.message.content, 'wide');
      assert.equal(b.requests.length, 0, 'the route no wider was skipped');
    } finally {
      await c.close();
    }
  });

  it('returns the primary error with the attempt list logged when every route fails; weight 0 is never tried', async () => {
    await twoRoutes({ bWeight: 0 });
    a.enqueue({ kind: 'status', status: 500, message: 'primary boom' });
    const res = await chat(gw!, { model: 'm' });
    assert.equal(res.status, 502);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /primary boom/);
    assert.equal(b.requests.length, 0, 'weight 0 is not even a fallback');
    const failed = await waitFor(() => gw!.logs.lines.find((l) => l.event === 'all_routes_failed'), 'the all_routes_failed line');
    assert.equal((failed?.attempts as unknown[]).length, 1);
    assert.deepEqual(gw!.logs.lines.filter((l) => l.level === 'error'), [], 'an upstream failure is not a gateway fault');
    assert.ok(gw!.logs.lines.some((l) => l.level === 'warn' && l.code === 'upstream_error'));
  });

  it('falls back when a stream fails before its first byte, but not after', async () => {
    await twoRoutes();
    a.enqueue({ kind: 'status', status: 502 });
    b.enqueue({ kind: 'sse', pieces: ['b-stream'] });
    assert.equal(streamedContent(await (await chat(gw!, { model: 'm', stream: true })).text()), 'b-stream');

    a.enqueue({ kind: 'reset_mid_stream', afterChunks: 2 });
    const text = await (await chat(gw!, { model: 'm', stream: true })).text();
    assert.match(text, /piece1/);
    const last = JSON.parse(events(text).at(-1)!) as { error: { code: string } };
    assert.equal(last.error.code, 'upstream_error');
    assert.equal(b.requests.length, 1, 'no fallback once bytes reached the client');
  });

  it('ends a stalled stream with an error event after the idle timeout', async () => {
    await twoRoutes({ env: { UPSTREAM_IDLE_TIMEOUT_SECONDS: '0.3' } });
    a.enqueue({ kind: 'stall_after_first_chunk' });
    const text = await (await chat(gw!, { model: 'm', stream: true })).text();
    assert.match(streamedContent(text.split('\n\n').slice(0, 1).join('\n\n') + '\n\n'), /Partial/);
    assert.match(text, /"code":"upstream_error"/);
    assert.equal(b.requests.length, 0);
  });

  it('aborts the upstream request when the client disconnects mid-stream', async () => {
    await twoRoutes();
    a.enqueue({ kind: 'sse', pieces: Array.from({ length: 50 }, (_, i) => `p${i} `), intervalMs: 40 });
    const controller = new AbortController();
    const res = await chat(gw!, { model: 'm', stream: true }, {}, controller.signal);
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const deadline = Date.now() + 5000;
    while (!a.requests[0]?.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(a.requests[0]?.aborted, true);
  });

  it('X-Route-Pin selects a route by label or endpoint id and disables fallback; an unknown pin is 400', async () => {
    await twoRoutes();
    b.enqueue({ kind: 'json', content: 'pinned b' });
    const pinned = await chat(gw!, { model: 'm' }, { 'x-route-pin': 'route-b' });
    assert.equal(((await pinned.json()) as Completion).choices[0]?.message.content, 'pinned b');
    b.enqueue({ kind: 'status', status: 503 });
    const endpointId = gw!.deps.registry.current.byName.get('m')!.routes[1]!.endpointId;
    const failed = await chat(gw!, { model: 'm' }, { 'x-route-pin': endpointId });
    assert.equal(failed.status, 502);
    assert.equal(a.requests.length, 0, 'a pinned request never falls back');
    const unknown = await chat(gw!, { model: 'm' }, { 'x-route-pin': 'nope' });
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /ProviderPinError/);
  });

  it('moves think blocks to reasoning_content with the think_block processor', async () => {
    await twoRoutes({ modelExtra: '    processor: think_block\n' });
    a.enqueue({ kind: 'json', content: '<think>plan it</think>\n\nThe answer.' });
    const body = (await (await chat(gw!, { model: 'm' })).json()) as Completion;
    assert.equal(body.choices[0]?.message.reasoning_content, 'plan it');
    assert.equal(body.choices[0]?.message.content, 'The answer.');
  });

  it('stamps the upstream priority by tier on priority_scheduling routes', async () => {
    await twoRoutes({ extraA: ', priority_scheduling: true', env: { ROUTING_LARGE_PROMPT_TOKENS: '10', ROUTING_ELEPHANT_PROMPT_TOKENS: '100' } });
    await chat(gw!, { model: 'm', priority: 1 });
    await chat(gw!, { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(80) }] });
    await chat(gw!, { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(800) }] });
    assert.deepEqual(a.requests.map((r) => (r.body as { priority: number }).priority), [20, 15, 0]);
  });

  it('answers 404 for unknown models, 400 for an embedding model, 401 when auth is on and no key is valid', async () => {
    const yaml = `models:\n  - { id: emb, name: E, model_type: embedding, provider: engine_a, base_url: "${a.url}" }\n${chatModelYaml('m', [`{ kind: engine_a, base_url: "${a.url}" }`])}`;
    gw = await startTestGateway({ modelsYaml: yaml });
    const missing = await chat(gw, { model: 'nope' });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'model_not_found');
    assert.equal((await chat(gw, { model: 'emb' })).status, 400);
    await gw.close();
    gw = await startTestGateway({ modelsYaml: yaml, env: { USER_AUTH_ENABLED: 'true' } });
    const unauthorized = await chat(gw, { model: 'm' }, { authorization: 'Bearer whatever' });
    assert.equal(unauthorized.status, 401);
    assert.equal(a.requests.length, 0);
  });

  it('rejects bad input with 400 (or 413) naming the field, and nothing reaches an upstream', async () => {
    await twoRoutes({ env: { GATEWAY_MAX_BODY_MIB: '0.01' } });
    const raw = (body: string) => fetch(`${gw!.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const cases: Array<[string, number, RegExp]> = [
      ['{"model": "m", "messages": [', 400, /not valid JSON/],
      ['[]', 400, /must be a JSON object/],
      ['{"messages": [{"role": "user", "content": "x"}]}', 400, /'model': is required/],
      ['{"model": 5, "messages": []}', 400, /'model': must be a non-empty string/],
      ['{"model": "m"}', 400, /'messages': is required/],
      ['{"model": "m", "messages": "hi"}', 400, /'messages': must be a non-empty array/],
      ['{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}', 400, /'messages\[0\]\.role'/],
      ['{"model": "m", "messages": [{"role": "user", "content": 5}]}', 400, /'messages\[0\]\.content'/],
      ['{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}', 400, /'stream': must be a boolean/],
      ['{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "many"}', 400, /'max_tokens': must be a number/],
      [JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(20_000) }] }), 413, /larger than/],
    ];
    for (const [body, status, message] of cases) {
      const res = await raw(body);
      assert.equal(res.status, status, body.slice(0, 60));
      assert.match(((await res.json()) as { error: { message: string } }).error.message, message);
    }
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  it('answers 501 for embeddings on a message-format kind (messages APIs have none), without calling upstream', async () => {
    gw = await startTestGateway({ modelsYaml: `models:\n  - { id: g, name: G, model_type: embedding, provider: vendor_g_api, base_url: "${a.url}" }\n` });
    const res = await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'g', input: 'x' }) });
    assert.equal(res.status, 501);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /vendor_g_api serves no embeddings/);
    assert.equal(a.requests.length, 0);
  });

  it('rejects bad input on /v1/completions and /v1/responses with 400 naming the field', async () => {
    await twoRoutes();
    const post = (path: string, body: unknown) => fetch(`${gw!.url}${path}`, { method: 'POST', body: JSON.stringify(body) });
    const cases: Array<[string, unknown, RegExp]> = [
      ['/v1/completions', { model: 'm' }, /'prompt'/],
      ['/v1/completions', { model: 'm', prompt: ['a', 'b'] }, /'prompt'/],
      ['/v1/responses', { model: 'm' }, /'input': is required/],
      ['/v1/responses', { model: 'm', input: [{ type: 'web_search_call' }] }, /'input\[0\]\.type'/],
      ['/v1/responses', { model: 'm', input: 'x', tools: [{ type: 'function' }] }, /'tools\[0\]\.name'/],
      ['/v1/responses', { model: 'm', input: 'x', previous_response_id: 'resp_1' }, /'previous_response_id'/],
      ['/v1/responses', { input: 'x' }, /'model': is required/],
    ];
    for (const [path, body, message] of cases) {
      const res = await post(path, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, message);
    }
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  it('rotates an api_keys pool across requests within one endpoint', async () => {
    gw = await startTestGateway({
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${a.url}", api_keys: [k1, "\${POOL_KEY}", k3] }`])}`,
      env: { POOL_KEY: 'k2' },
    });
    for (let i = 0; i < 4; i += 1) assert.equal((await chat(gw, { model: 'm' })).status, 200);
    assert.deepEqual(a.requests.map((r) => r.headers.authorization), ['Bearer k1', 'Bearer k2', 'Bearer k3', 'Bearer k1']);
    assert.equal(gw.deps.registry.current.byName.get('m')!.routes.length, 1, 'the pool is one endpoint');
  });

  it('treats a client that disconnects during a non-streaming request as gone, not as a server error', async () => {
    await twoRoutes();
    a.enqueue({ kind: 'slow_first_byte', delayMs: 1500, then: { kind: 'json' } });
    const controller = new AbortController();
    const pending = chat(gw!, { model: 'm' }, {}, controller.signal).catch((err: Error) => err.name);
    await a.waitForRequests(1);
    controller.abort();
    assert.equal(await pending, 'AbortError');
    const deadline = Date.now() + 5000;
    while (!a.requests[0]?.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(a.requests[0]?.aborted, true, 'the upstream request is aborted too');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(gw!.logs.lines.filter((l) => l.level === 'error'), []);
    assert.equal(b.requests.length, 0, 'no fallback for a client that left');
  });

  it('serves inference routes with the shared behaviours: 405 + Allow, X-Request-Id, http_request lines, query strings', async () => {
    await twoRoutes();
    const wrongMethod = await fetch(`${gw!.url}/v1/chat/completions`);
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST');
    assert.equal(((await wrongMethod.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
    const res = await fetch(`${gw!.url}/v1/chat/completions?trace=1`, {
      method: 'POST', headers: { 'x-request-id': 'req-fast-1' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'req-fast-1');
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    await res.json();
    const line = await waitFor(() => gw!.logs.lines.find((l) => l.event === 'http_request' && l.request_id === 'req-fast-1'), 'the http_request line');
    assert.deepEqual({ method: line?.method, path: line?.path, status: line?.status, completed: line?.completed }, { method: 'POST', path: '/v1/chat/completions', status: 200, completed: true });
  });
});
