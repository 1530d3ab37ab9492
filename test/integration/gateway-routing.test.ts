/**
 * The routing core through a real gateway and real fake upstreams: the circuit breaker (traffic
 * stops, half-open recovery, 503 while probing), session affinity (one caller stays, moves when
 * its circuit opens) and the adaptive concurrency limit (a 429 storm shrinks it; it recovers).
 * Time is a fake clock handed to the gateway; nothing asserts on durations.
 */
import assert from 'node:assert/strict';
import { closeAll, startFakeUpstream, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

function chat(gw: TestGateway, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
  });
}

async function ok(gw: TestGateway, headers: Record<string, string> = {}): Promise<void> {
  const res = await chat(gw, headers);
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
}

describe('gateway routing: breaker, affinity, concurrency', function () {
  this.timeout(30_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;
  const clock = { now: 1_000_000 };

  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    clock.now = 1_000_000;
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  async function start(routes: string[], env: Record<string, string> = {}, rng: () => number = () => 0, extra: { concurrencyExemptHosts?: string[] } = {}): Promise<TestGateway> {
    gw = await startTestGateway({
      modelsYaml: `models:\n${chatModelYaml('m', routes)}`, rng, now: () => clock.now,
      env: { CIRCUIT_FAILURE_THRESHOLD: '2', CIRCUIT_COOLDOWN_SECONDS: '30', ...env }, ...extra,
    });
    return gw;
  }

  const routeA = () => `{ kind: generic_compat, base_url: "${a.url}", provider: route-a }`;
  const routeB = () => `{ kind: generic_compat, base_url: "${b.url}", provider: route-b }`;

  it('stops sending traffic to a failing endpoint, then recovers it through one half-open test request', async () => {
    await start([routeA(), routeB()]);
    a.setDefault({ kind: 'status', status: 500, message: 'engine crashed' });
    await ok(gw!);
    await ok(gw!);
    assert.equal(a.requests.length, 2);
    const open = gw!.logs.lines.find((l) => l.event === 'circuit_open');
    assert.equal(open?.level, 'warn');
    // Open: A is not tried at all; B answers.
    await ok(gw!);
    await ok(gw!);
    assert.equal(a.requests.length, 2);
    assert.equal(b.requests.length, 4);
    // Cooldown elapsed: one test request goes to A (first in the weighted order) and closes the circuit.
    a.setDefault(undefined);
    clock.now += 30_000;
    await ok(gw!);
    assert.equal(a.requests.length, 3);
    assert.equal(b.requests.length, 4);
    const closed = gw!.logs.lines.find((l) => l.event === 'circuit_closed');
    assert.equal(closed?.level, 'info');
    await ok(gw!);
    assert.equal(a.requests.length, 4, 'closed again: A takes traffic');
  });

  it('answers 503 naming the endpoint while the only route is open or its probe is in flight', async () => {
    await start([routeA()]);
    a.setDefault({ kind: 'status', status: 502 });
    assert.equal((await chat(gw!)).status, 502);
    assert.equal((await chat(gw!)).status, 502);
    const refused = await chat(gw!);
    assert.equal(refused.status, 503);
    const body = await refused.json() as { error: { message: string; code: string } };
    assert.match(body.error.message, /AllCircuitsOpenError/);
    assert.match(body.error.message, /route-a, circuit open/);
    assert.equal(a.requests.length, 2);
    // Half-open: the test request stalls at A; a second request has nowhere to go.
    clock.now += 30_000;
    a.setDefault(undefined);
    a.enqueue({ kind: 'slow_first_byte', delayMs: 300, then: { kind: 'json', content: 'probe' } });
    const probe = chat(gw!);
    await a.waitForRequests(3);
    const during = await chat(gw!);
    assert.equal(during.status, 503);
    assert.match((await during.json() as { error: { message: string } }).error.message, /probe in flight/);
    assert.equal((await probe).status, 200);
    await ok(gw!);
    assert.equal(a.requests.length, 4);
  });

  it('counts a stream that fails before its first byte; a client leaving does not count', async () => {
    await start([routeA(), routeB()]);
    const stream = async (signal?: AbortSignal) => fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'Hi' }] }), ...(signal ? { signal } : {}),
    });
    // A client that leaves while A is still silent: no verdict on A.
    a.enqueue({ kind: 'slow_first_byte', delayMs: 5_000, then: { kind: 'sse' } });
    const leaving = new AbortController();
    const gone = stream(leaving.signal).catch(() => undefined);
    await a.waitForRequests(1);
    leaving.abort();
    await gone;
    // Two streams reset before any chunk: B answers both (fallback) and A's circuit opens.
    a.enqueue({ kind: 'reset_mid_stream', afterChunks: 0 }, { kind: 'reset_mid_stream', afterChunks: 0 });
    b.enqueue({ kind: 'sse' }, { kind: 'sse' });
    for (let i = 0; i < 2; i += 1) {
      const res = await stream();
      assert.equal(res.status, 200);
      assert.match(await res.text(), /\[DONE\]/);
    }
    assert.equal(b.requests.length, 2);
    const open = gw!.logs.lines.find((l) => l.event === 'circuit_open');
    assert.equal(open?.consecutive_failures, 2, 'the client that left was not a failure');
    await ok(gw!);
    assert.equal(a.requests.length, 3, 'A no longer tried');
  });

  it('does not count client errors, context-length refusals or 429 against the breaker', async () => {
    await start([routeA()]);
    a.enqueue({ kind: 'status', status: 400, message: 'bad field' }, { kind: 'context_length' }, { kind: 'status', status: 429 }, { kind: 'status', status: 422 });
    for (let i = 0; i < 4; i += 1) assert.notEqual((await chat(gw!)).status, 200);
    await ok(gw!);
    assert.equal(a.requests.length, 5);
    assert.equal(gw!.logs.lines.some((l) => l.event === 'circuit_open'), false);
  });

  /** The first draw picks B (0.99); every later draw would pick A (0.01). */
  function firstDrawB(): () => number {
    let first = true;
    return () => {
      const draw = first ? 0.99 : 0.01;
      first = false;
      return draw;
    };
  }
  const proxied = { TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32' };

  it('keeps one caller on one endpoint across requests and moves it when that circuit opens', async () => {
    // Trusted proxy: the caller is identified by its forwarded address (affinity key ip:<bucket>).
    await start([routeA(), routeB()], proxied, firstDrawB());
    const caller = { 'x-forwarded-for': '8.8.8.8' };
    await ok(gw!, caller); // the first draw picks B and pins it
    for (let i = 0; i < 4; i += 1) await ok(gw!, caller);
    assert.equal(b.requests.length, 5, 'the pin holds although every later draw favours A');
    assert.equal(a.requests.length, 0);
    await ok(gw!, { 'x-forwarded-for': '9.9.9.9' });
    assert.equal(a.requests.length, 1, 'another caller draws on its own');
    // B's circuit opens through other traffic (admin route pins) while the caller's pin stands.
    b.setDefault({ kind: 'status', status: 503 });
    for (let i = 0; i < 2; i += 1) assert.equal((await chat(gw!, { 'x-route-pin': 'route-b' })).status, 502);
    assert.ok(gw!.logs.lines.some((l) => l.event === 'circuit_open'));
    const bAfterOpen = b.requests.length;
    for (let i = 0; i < 3; i += 1) await ok(gw!, caller);
    assert.equal(b.requests.length, bAfterOpen, 'B is open: the caller moved without trying it');
    assert.equal(a.requests.length, 4);
    // B recovers; the caller stays pinned to A (fresh pin), although B would be healthy again.
    b.setDefault(undefined);
    clock.now += 30_000;
    await ok(gw!, caller);
    assert.equal(a.requests.length, 5);
  });

  it('drops the pin on an adapter error: fallback answers and the next request re-picks', async () => {
    await start([routeA(), routeB()], { ...proxied, CIRCUIT_FAILURE_THRESHOLD: '5' }, firstDrawB());
    const caller = { 'x-forwarded-for': '8.8.8.8' };
    await ok(gw!, caller);
    assert.equal(b.requests.length, 1);
    b.enqueue({ kind: 'status', status: 500 });
    await ok(gw!, caller); // B fails, A answers through fallback
    assert.deepEqual([a.requests.length, b.requests.length], [1, 2]);
    await ok(gw!, caller); // re-pick: the draw now favours A
    await ok(gw!, caller);
    assert.deepEqual([a.requests.length, b.requests.length], [3, 2]);
  });

  it('ROUTING_AFFINITY_ENABLED=0: every request is a fresh weighted pick', async () => {
    await start([routeA(), routeB()], { ...proxied, ROUTING_AFFINITY_ENABLED: '0' }, firstDrawB());
    const caller = { 'x-forwarded-for': '8.8.8.8' };
    await ok(gw!, caller);
    await ok(gw!, caller);
    assert.deepEqual([a.requests.length, b.requests.length], [1, 1]);
    assert.equal(gw!.deps.routing.affinity.size, 0);
  });

  it('shrinks a (provider, key) concurrency limit under a 429 storm and grows it back', async () => {
    await start([`{ kind: generic_compat, base_url: "${a.url}", provider: route-a, api_key: k1 }`], {
      UPSTREAM_CONCURRENCY_INITIAL_LIMIT: '4', UPSTREAM_CONCURRENCY_MAX_LIMIT: '5', UPSTREAM_CONCURRENCY_PROBE_SUCCESS_INTERVAL: '2',
    }, () => 0, { concurrencyExemptHosts: [] });
    const limit = () => gw!.deps.concurrency.snapshot().find((l) => l.lane === 'route-a')?.limit;
    a.enqueue(...Array.from({ length: 6 }, () => ({ kind: 'status' as const, status: 429 })));
    for (let i = 0; i < 6; i += 1) assert.equal((await chat(gw!)).status, 429);
    assert.equal(limit(), 1, 'minus one per 429, never below one');
    assert.equal(gw!.logs.lines.some((l) => l.event === 'circuit_open'), false, 'a 429 storm does not open the circuit');
    for (let i = 0; i < 6; i += 1) await ok(gw!);
    assert.equal(limit(), 4, 'plus one every two successes');
    for (let i = 0; i < 6; i += 1) await ok(gw!);
    assert.equal(limit(), 5, 'capped at the maximum');
  });

  it('honours Retry-After: the key is not used again before it passes; the next route answers', async () => {
    await start([routeA(), routeB()], {}, () => 0, { concurrencyExemptHosts: [] });
    a.enqueue({ kind: 'status', status: 429, retryAfter: 20 });
    await ok(gw!);
    assert.equal(a.requests.length, 1);
    assert.equal(b.requests.length, 1);
    await ok(gw!);
    assert.equal(a.requests.length, 1, 'A paused by Retry-After');
    clock.now += 20_000;
    await ok(gw!);
    assert.equal(a.requests.length, 2);
  });

  it('a permit wait past the acquire timeout fails over to the next route without counting against the breaker', async () => {
    await start([`{ kind: generic_compat, base_url: "${a.url}", provider: route-a, api_key: k1 }`, routeB()], {
      CIRCUIT_FAILURE_THRESHOLD: '1', UPSTREAM_CONCURRENCY_INITIAL_LIMIT: '1', UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC: '0.05',
    }, () => 0, { concurrencyExemptHosts: [] });
    a.enqueue({ kind: 'slow_first_byte', delayMs: 400, then: { kind: 'json' } });
    const holder = chat(gw!);
    await a.waitForRequests(1);
    await ok(gw!); // waits for A's only permit, gives up, B answers
    assert.deepEqual([a.requests.length, b.requests.length], [1, 1]);
    assert.equal((await holder).status, 200);
    assert.equal(gw!.logs.lines.some((l) => l.event === 'circuit_open'), false, 'threshold 1, yet the wait was not a failure');
    await ok(gw!);
    assert.equal(a.requests.length, 2, 'A serves again once its permit is free');
  });

  it('prefill-aware choice: a heavy backlog on the weighted pick sends the next request to the lighter endpoint', async () => {
    await start([routeA(), routeB()], { ROUTING_PREFILL_INTERVENE_TOKENS: '200' });
    const big = 'x'.repeat(4000); // ≈ 1000 tokens
    a.enqueue({ kind: 'slow_first_byte', delayMs: 400, then: { kind: 'json' } });
    const heavy = fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: big }] }),
    });
    await a.waitForRequests(1);
    assert.equal(gw!.deps.routing.prefill.backlog(gw!.deps.registry.current.models[0]!.routes[0]!.endpointId), 1000, '4 bytes of text per token');
    await ok(gw!); // the weighted draw favours A (rng 0), but A has ≥ 200 tokens queued: B first
    assert.deepEqual([a.requests.length, b.requests.length], [1, 1]);
    assert.equal((await heavy).status, 200);
    await ok(gw!);
    assert.deepEqual([a.requests.length, b.requests.length], [2, 1], 'backlog drained: the weighted pick stands');
  });

  it('exempts local hosts from the concurrency limit by default', async () => {
    await start([routeA()], { UPSTREAM_CONCURRENCY_INITIAL_LIMIT: '1' });
    a.enqueue({ kind: 'status', status: 429 });
    assert.equal((await chat(gw!)).status, 429);
    assert.deepEqual(gw!.deps.concurrency.snapshot(), []);
  });
});

describe('gateway routing: embeddings keep their chain behind the breaker', function () {
  this.timeout(30_000);
  let a: FakeUpstream;
  let gw: TestGateway | undefined;
  afterEach(async () => closeAll(gw, a));

  it('skips an embeddings endpoint whose circuit is open and answers 503 naming it', async () => {
    a = await startFakeUpstream();
    gw = await startTestGateway({
      modelsYaml: `models:\n  - id: e\n    name: e\n    model_type: embedding\n    route:\n      - { kind: generic_compat, base_url: "${a.url}", provider: emb-a }\n`,
      env: { CIRCUIT_FAILURE_THRESHOLD: '1' },
    });
    a.setDefault({ kind: 'status', status: 500 });
    const embed = () => fetch(`${gw!.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'e', input: 'x' }) });
    assert.equal((await embed()).status, 502);
    const refused = await embed();
    assert.equal(refused.status, 503);
    assert.match(await refused.text(), /emb-a, circuit open/);
    assert.equal(a.requests.length, 1);
  });
});
