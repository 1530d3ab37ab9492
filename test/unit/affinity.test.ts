import assert from 'node:assert/strict';
import type { Model, Route } from '../../gateway/registry';
import { AffinityTable } from '../../gateway/routing/affinity';
import { CircuitBreakers } from '../../gateway/routing/breaker';
import { PrefillTracker } from '../../gateway/routing/prefill';
import { RoutingCore } from '../../gateway/routing/selector';
import { httpError } from '../../gateway/upstream/upstream-error';

const MIN = 60_000;

function table(options: { maxAgeMs?: number; enabled?: boolean; sweepAbove?: number } = {}) {
  const clock = { now: 0 };
  const t = new AffinityTable({ enabled: options.enabled ?? true, ttlMs: 5 * MIN, maxAgeMs: options.maxAgeMs ?? 24 * 60 * MIN, sweepAbove: options.sweepAbove ?? 1000, now: () => clock.now });
  return { t, clock };
}

describe('affinity table', () => {
  it('none → pinned on the first answer; the TTL slides with every use', () => {
    const { t, clock } = table();
    const key = AffinityTable.key('ip:8.8.8.8', 'm');
    assert.equal(t.lookup(key), undefined);
    t.pin(key, 'e1');
    for (let i = 0; i < 10; i += 1) {
      clock.now += 4 * MIN;
      assert.equal(t.lookup(key), 'e1');
      t.pin(key, 'e1');
    }
    clock.now += 5 * MIN;
    assert.equal(t.lookup(key), 'e1', 'exactly the TTL idle is still pinned');
    clock.now += 1;
    assert.equal(t.lookup(key), undefined, 'idle longer than the TTL: expired');
  });

  it('pins are per caller and per model', () => {
    const { t } = table();
    t.pin(AffinityTable.key('key:1', 'm'), 'e1');
    assert.equal(t.lookup(AffinityTable.key('key:1', 'other')), undefined);
    assert.equal(t.lookup(AffinityTable.key('key:2', 'm')), undefined);
  });

  it('a pin older than the maximum age is dropped even while in use; 0 disables the cap', () => {
    const { t, clock } = table({ maxAgeMs: 20 * MIN });
    t.pin('k', 'e1');
    for (let i = 0; i < 5; i += 1) {
      clock.now += 4 * MIN;
      assert.equal(t.lookup('k'), 'e1');
      t.pin('k', 'e1');
    }
    clock.now += 1;
    assert.equal(t.lookup('k'), undefined);
    t.pin('k', 'e1');
    clock.now += 4 * MIN;
    assert.equal(t.lookup('k'), 'e1', 'a fresh pin restarts its age');

    const uncapped = table({ maxAgeMs: 0 });
    uncapped.t.pin('k', 'e1');
    for (let i = 0; i < 1000; i += 1) {
      uncapped.clock.now += 4 * MIN;
      uncapped.t.pin('k', 'e1');
    }
    assert.equal(uncapped.t.lookup('k'), 'e1');
  });

  it('sweeps expired pins lazily, only once the table holds more than the threshold', () => {
    const { t, clock } = table({ sweepAbove: 3 });
    t.pin('a', 'e');
    t.pin('b', 'e');
    t.pin('c', 'e');
    clock.now += 6 * MIN;
    assert.equal(t.size, 3, 'expired pins stay until a sweep');
    t.pin('d', 'e');
    assert.equal(t.size, 1, 'above the threshold: the expired three are swept');
  });

  it('the kill switch neither reads nor writes pins', () => {
    const { t } = table({ enabled: false });
    t.pin('k', 'e1');
    assert.equal(t.lookup('k'), undefined);
    assert.equal(t.size, 0);
  });
});

function route(endpointId: string, weight = 1): Route {
  return { endpointId, providerLabel: endpointId, weight, contextLength: 8192 } as unknown as Route;
}

function core(options: { ceiling?: number; draws?: number[] } = {}) {
  const clock = { now: 0 };
  const draws = [...(options.draws ?? [])];
  const breakers = new CircuitBreakers({ failureThreshold: 1, cooldownMs: 30_000, minAvailability: 0, availabilityAlpha: 0.05, now: () => clock.now });
  const routing = new RoutingCore({
    breakers,
    affinity: new AffinityTable({ enabled: true, ttlMs: 5 * MIN, maxAgeMs: 0, sweepAbove: 1000, now: () => clock.now }),
    prefill: new PrefillTracker({ enabled: true, interveneTokens: 1_000_000, elephantTokens: 32_768, maxElephantsPerEndpoint: 0, memoryMs: 5 * MIN, now: () => clock.now }),
    rng: () => draws.shift() ?? 0,
    affinityCeilingTokens: 10_000,
  });
  return { routing, clock, breakers };
}

const model = (routes: Route[]) => ({ id: 'm', routes, router: undefined } as unknown as Model);
const request = { callerKey: 'ip:8.8.8.8', promptTokens: 100, synthetic: false };
const order = (routes: readonly Route[]) => routes.map((r) => r.endpointId);

/** Runs one request: the first admitted route answers (or fails with `fail`). */
function serve(routing: RoutingCore, m: Model, fail?: number): string | undefined {
  const ticket = routing.plan(m, request);
  for (const r of ticket.routes) {
    if (!ticket.admit(r)) continue;
    if (fail !== undefined) {
      ticket.failed(r, httpError(fail, '', undefined));
      fail = undefined;
      continue;
    }
    ticket.succeeded(r);
    return r.endpointId;
  }
  return undefined;
}

describe('affinity in route selection', () => {
  it('pinned: a request within the TTL goes to the pinned endpoint first, fallback after it', () => {
    const { routing } = core({ draws: [0.9] });
    const m = model([route('a'), route('b'), route('c')]);
    assert.equal(serve(routing, m), 'c');
    assert.deepEqual(order(routing.plan(m, request).routes).slice(0, 1), ['c']);
    assert.equal(routing.plan(m, request).routes.length, 3);
  });

  it('pinned + adapter error → none: fallback answers and the pin is gone', () => {
    const { routing } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    assert.equal(serve(routing, m), 'b');
    assert.equal(serve(routing, m, 500), 'a', 'b failed; a answered through fallback');
    assert.equal(routing.affinity.lookup(AffinityTable.key(request.callerKey, 'm')), undefined, 'no pin after a fallback');
  });

  it('pinned + endpoint weight 0 → none, fresh pick', () => {
    const { routing } = core({ draws: [0.9] });
    assert.equal(serve(routing, model([route('a'), route('b')])), 'b');
    const reweighted = model([route('a'), route('b', 0)]);
    assert.deepEqual(order(routing.plan(reweighted, request).routes), ['a']);
    assert.equal(routing.affinity.lookup(AffinityTable.key(request.callerKey, 'm')), undefined, 'the pin was dropped');
  });

  it('pinned + circuit open → none, fresh pick (the open endpoint is last, refused)', () => {
    const { routing, breakers } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    assert.equal(serve(routing, m), 'b');
    breakers.admit('b');
    breakers.record('b', false);
    const ticket = routing.plan(m, request);
    assert.deepEqual(order(ticket.routes), ['a', 'b']);
    assert.equal(ticket.admit(ticket.routes[1]!), false);
    assert.equal(routing.affinity.lookup(AffinityTable.key(request.callerKey, 'm')), undefined);
  });

  it('pinned + backlog above the ceiling → abandoned for this request, reselected without it, then re-pinned', () => {
    const { routing } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    assert.equal(serve(routing, m), 'b');
    routing.prefill.start('b', 10_001, false);
    const ticket = routing.plan(m, request);
    assert.deepEqual(order(ticket.routes), ['a', 'b'], 'the pinned endpoint only as a last resort');
    assert.equal(serve(routing, m), 'a');
    routing.prefill.finish('b', 10_001, false);
    assert.equal(order(routing.plan(m, request).routes)[0], 'a', 're-pinned to the endpoint that answered');
  });

  it('at the ceiling exactly, the pin holds', () => {
    const { routing } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    serve(routing, m);
    routing.prefill.start('b', 10_000, false);
    assert.equal(order(routing.plan(m, request).routes)[0], 'b');
  });

  it('a follow-up prompt adds only its growth to the backlog of the endpoint that served the caller', () => {
    const { routing } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    const first = routing.plan(m, { ...request, promptTokens: 5000 });
    first.admit(first.routes[0]!);
    assert.equal(routing.prefill.backlog('b'), 5000);
    first.succeeded(first.routes[0]!);
    assert.equal(routing.prefill.backlog('b'), 0);
    const next = routing.plan(m, { ...request, promptTokens: 5600 });
    assert.equal(next.routes[0]!.endpointId, 'b');
    next.admit(next.routes[0]!);
    assert.equal(routing.prefill.backlog('b'), 600);
    next.failed(next.routes[0]!, httpError(500, '', undefined));
    assert.equal(routing.prefill.backlog('b'), 0, 'a failed attempt leaves the backlog');
    const elsewhere = routing.plan(m, { ...request, promptTokens: 5600 });
    const a = elsewhere.routes.find((r) => r.endpointId === 'a')!;
    elsewhere.admit(a);
    assert.equal(routing.prefill.backlog('a'), 5600, 'another endpoint holds no cache of it');
  });

  it('synthetic probes record no routing observation: no pin, no breaker outcome, never the half-open test', () => {
    const { routing, breakers, clock } = core({ draws: [0.9] });
    const m = model([route('a'), route('b')]);
    const synthetic = { ...request, synthetic: true };
    const ticket = routing.plan(m, synthetic);
    ticket.admit(ticket.routes[0]!);
    ticket.succeeded(ticket.routes[0]!);
    assert.equal(routing.affinity.size, 0);
    for (let i = 0; i < 3; i += 1) {
      const failing = routing.plan(m, synthetic);
      assert.equal(failing.admit(failing.routes[0]!), true);
      failing.failed(failing.routes[0]!, httpError(500, '', undefined));
    }
    assert.equal(breakers.snapshot('a').state, 'closed', 'threshold 1, yet synthetic failures opened nothing');
    assert.equal(breakers.snapshot('a').availability, 1);
    // Open a's circuit with real traffic; after the cooldown a synthetic request may not be the test request.
    const real = routing.plan(m, { ...request, callerKey: undefined });
    real.admit(real.routes.find((r) => r.endpointId === 'a')!);
    real.failed(real.routes.find((r) => r.endpointId === 'a')!, httpError(500, '', undefined));
    clock.now += 30_000;
    const probe = routing.plan(model([route('a')]), synthetic);
    assert.equal(probe.admit(probe.routes[0]!), false);
  });
});
