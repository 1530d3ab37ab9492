/**
 * Offload decisions (docs/routing.md "Offload") as pure functions and through the fallback driver with scripted
 * attempts: which reason, at most once, `max_input_tokens`, inactive reasons, and what happens
 * when the offload route fails.
 */
import assert from 'node:assert/strict';
import type { AppError } from '../../lib/errors';
import type { Model, Route } from '../../gateway/registry';
import { runWithFallback } from '../../gateway/routing/fallback';
import { ClientAbort } from '../../lib/http/client-abort';
import { EngineQueues, mayOffload, OffloadNow, offloadReason, OffloadRun, offloadStatus, OffloadPolicies } from '../../gateway/routing/offload';
import type { OffloadPolicy } from '../../gateway/runtime-config/types';
import { UpstreamError } from '../../gateway/upstream/upstream-error';
import { captureLogs } from '../support/logs';

function route(routeId: string, weight = 1, metadata: Record<string, unknown> = {}): Route {
  return { routeId, endpointId: `ep-${routeId}`, providerLabel: routeId, weight, contextLength: 8192, routeMetadata: metadata } as unknown as Route;
}

function model(routes: Route[], extra: Partial<Model> = {}): Model {
  return { id: 'm', modelType: 'chat', routerParams: {}, routes, ...extra } as unknown as Model;
}

const POLICY: OffloadPolicy = { route_id: 'm#1', wait_seconds: 0.2 };

describe('offload decisions', () => {
  it('names the reason for each trigger; engine wait only for streams', () => {
    const stream = { stream: true, alreadyOffloaded: false, eligible: true };
    assert.equal(offloadReason('first_byte_wait_expired', stream), 'engine_wait');
    assert.equal(offloadReason('queue_wait_expired', stream), 'queue_wait');
    assert.equal(offloadReason('local_routes_exhausted', stream), 'last_resort');
    const plain = { ...stream, stream: false };
    assert.equal(offloadReason('first_byte_wait_expired', plain), undefined, 'a non-streaming request is not engine-waited');
    assert.equal(offloadReason('queue_wait_expired', plain), 'queue_wait');
    assert.equal(offloadReason('local_routes_exhausted', plain), 'last_resort');
  });

  it('never offloads twice, nor a prompt above max_input_tokens', () => {
    for (const trigger of ['first_byte_wait_expired', 'queue_wait_expired', 'local_routes_exhausted'] as const) {
      assert.equal(offloadReason(trigger, { stream: true, alreadyOffloaded: true, eligible: true }), undefined, trigger);
      assert.equal(offloadReason(trigger, { stream: true, alreadyOffloaded: false, eligible: false }), undefined, trigger);
    }
    assert.equal(mayOffload({}, 1e9), true, 'no limit');
    assert.equal(mayOffload({ max_input_tokens: 100 }, 100), true);
    assert.equal(mayOffload({ max_input_tokens: 100 }, 101), false);
  });

  it('reports why a stored policy is not in force', () => {
    const local = route('m#0');
    const off = route('m#1');
    assert.deepEqual(offloadStatus(model([local, off]), POLICY, 'fixed'), { active: true, route: off });
    assert.deepEqual(offloadStatus(undefined, POLICY, 'fixed'), { active: false, reason: 'model not found' });
    assert.deepEqual(offloadStatus(model([local]), POLICY, 'fixed'), { active: false, reason: 'offload route m#1 no longer exists' });
    assert.match((offloadStatus(model([local, off]), POLICY, 'routewise') as { reason: string }).reason, /uses the routewise strategy; offload applies to router fixed only/);
    assert.match((offloadStatus(model([local, route('m#1', 1, { hybrid_composition: true })]), POLICY, 'fixed') as { reason: string }).reason, /hybrid/);
    assert.match((offloadStatus(model([local, off], { modelType: 'embedding' }), POLICY, 'fixed') as { reason: string }).reason, /embedding model/);
    assert.match((offloadStatus(model([local, route('m#1', 0)]), POLICY, 'fixed') as { reason: string }).reason, /effective weight 0/);
    assert.match((offloadStatus(model([route('m#0', 0), off]), POLICY, 'fixed') as { reason: string }).reason, /no other route/);
  });

  it('waits only while the request may still go to the offload route (eligible, not yet offloaded, its circuit not open)', () => {
    const logs = captureLogs();
    const queued = { ...POLICY, engine_queue_limit: 2 };
    let reachable = true;
    const stream = new OffloadRun('m', route('m#1'), queued, true, true, logs.log, () => reachable);
    assert.deepEqual([stream.engineWaitMs, stream.queueWaits, stream.canOffloadNow], [200, true, true]);
    reachable = false;
    assert.deepEqual([stream.queueWaits, stream.canOffloadNow], [false, false], 'offload circuit open: no queue wait, the engine wait keeps waiting');
    const plain = new OffloadRun('m', route('m#1'), POLICY, false, true, logs.log);
    assert.deepEqual([plain.engineWaitMs, plain.queueWaits, plain.permitWaitMs], [undefined, false, 200], 'without engine_queue_limit the permit wait is the queue wait');
    assert.equal(new OffloadRun('m', route('m#1'), POLICY, false, true, logs.log, () => false).permitWaitMs, undefined);
    const big = new OffloadRun('m', route('m#1'), queued, true, false, logs.log);
    assert.deepEqual([big.engineWaitMs, big.queueWaits, big.canOffloadNow], [undefined, false, false]);
    assert.equal(stream.request('queue_wait_expired', route('m#0')), true);
    stream.begin(undefined);
    assert.deepEqual(stream.attribution, { queue_wait: true });
    reachable = true;
    assert.deepEqual([stream.engineWaitMs, stream.queueWaits, stream.canOffloadNow], [undefined, false, false], 'offloaded once: no more waits');
  });

  it('compiles the stored policies once per stored state', () => {
    const policies = new OffloadPolicies('model_offload_route:');
    let settings = new Map<string, unknown>([['model_offload_route:m', POLICY], ['other', 1]]);
    policies.source = () => settings;
    assert.deepEqual(policies.policyFor('m'), POLICY);
    assert.equal(policies.policyFor('other'), undefined);
    settings = new Map();
    assert.equal(policies.policyFor('m'), undefined, 'a new stored state is seen at once');
  });
});

describe('offload through the fallback driver', () => {
  const a = route('m#0');
  const b = route('m#2');
  const off = route('m#1');
  /** A scripted attempt: the function's return value resolves it, its throw rejects it. */
  const scripted = (fn: (r: Route) => string) => (r: Route) => new Promise<string>((resolve) => resolve(fn(r)));
  const fail = (r: Route) => new UpstreamError(`${r.routeId} down`, 'http', 502, true, { upstreamStatus: 500 });

  function run(options: { stream?: boolean; eligible?: boolean } = {}) {
    const logs = captureLogs();
    const offload = new OffloadRun('m', off, POLICY, options.stream ?? true, options.eligible ?? true, logs.log);
    return { offload, logs, options: { modelId: 'm', state: { log: logs.log }, pinned: false, onUpstreamAuthFailure: () => undefined, offload } };
  }

  it('engine wait: the slow local attempt is abandoned and the offload route answers, once', async () => {
    const { offload, logs, options } = run();
    const tried: string[] = [];
    const result = await runWithFallback([a, b, off], scripted((r) => {
      tried.push(r.routeId);
      if (r === a) throw new OffloadNow('first_byte_wait_expired');
      return r.routeId;
    }), options);
    assert.deepEqual(tried, ['m#0', 'm#1'], 'the offload route goes next, before the other local route');
    assert.equal(result.value, 'm#1');
    assert.deepEqual(offload.attribution, { engine_wait: true });
    const line = logs.lines.find((l) => l.event === 'route_offload');
    assert.deepEqual([line?.level, line?.model, line?.reason, line?.from_endpoint_id, line?.to_endpoint_id], ['info', 'm', 'engine_wait', 'ep-m#0', 'ep-m#1']);
    assert.equal(offload.request('first_byte_wait_expired', b), false, 'never offloaded twice');
  });

  it('a failed offload is recorded and the remaining local routes carry on', async () => {
    const { offload, options } = run();
    const tried: string[] = [];
    const result = await runWithFallback([a, b, off], scripted((r) => {
      tried.push(r.routeId);
      if (r === a) throw new OffloadNow('first_byte_wait_expired');
      if (r === off) throw fail(r);
      return r.routeId;
    }), options);
    assert.deepEqual(tried, ['m#0', 'm#1', 'm#2']);
    assert.equal(result.value, 'm#2');
    assert.deepEqual(offload.attribution, { engine_wait: true, offload_endpoint_id: 'ep-m#1' });
  });

  it('last resort: every local route failed', async () => {
    const { offload, options } = run({ stream: false });
    const result = await runWithFallback([a, b, off], scripted((r) => {
      if (r !== off) throw fail(r);
      return r.routeId;
    }), options);
    assert.equal(result.value, 'm#1');
    assert.deepEqual(offload.attribution, { last_resort: true });
    assert.equal(result.failedAttempts.length, 2);
  });

  it('a prompt above max_input_tokens is never offloaded: 503 saying so when the local routes cannot serve', async () => {
    const { offload, options } = run({ eligible: false });
    await assert.rejects(runWithFallback([a], scripted((r) => {
      throw fail(r);
    }), options), (err: AppError) => {
      assert.equal(err.code, 'no_provider_available');
      assert.equal(err.status, 503);
      assert.match(err.message, /max_input_tokens/);
      return true;
    });
    assert.equal(offload.attribution, undefined);
    assert.equal(offload.engineWaitMs, undefined, 'no engine wait for it either');
  });
});

describe('engine queues (engine_queue_limit)', () => {
  const signal = () => new ClientAbort();

  it('admits up to the limit at once, then a waiter is admitted when a stream returns its first token', async () => {
    const queues = new EngineQueues();
    assert.equal(await queues.enter('ep', { stream: true, limit: 1, waitMs: 5000, signal: signal() }), true);
    assert.equal(queues.pending('ep'), 1);
    const waiting = queues.enter('ep', { stream: true, limit: 1, waitMs: 5000, signal: signal() });
    queues.leave('ep', 1);
    assert.equal(await waiting, true);
    assert.equal(queues.pending('ep'), 1, 'the admitted stream took the place');
  });

  it('a wait with no room ends false (offload); non-streaming requests take no place; a client abort rejects', async () => {
    const queues = new EngineQueues();
    await queues.enter('ep', { stream: true, limit: 1, waitMs: 5000, signal: signal() });
    assert.equal(await queues.enter('ep', { stream: false, limit: 1, waitMs: 20, signal: signal() }), false);
    const gone = signal();
    const waiting = queues.enter('ep', { stream: true, limit: 1, waitMs: 5000, signal: gone });
    gone.abort();
    await assert.rejects(waiting, /client closed/);
    assert.equal(await queues.enter('ep', { stream: true, limit: undefined, waitMs: 20, signal: signal() }), true, 'no limit: admitted, counted');
    assert.equal(queues.pending('ep'), 2);
    assert.equal(await queues.enter('other', { stream: false, limit: 1, waitMs: 20, signal: signal() }), true);
    assert.equal(queues.pending('other'), 0);
  });
});
