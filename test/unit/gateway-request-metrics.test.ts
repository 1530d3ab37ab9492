/**
 * The request path's metric counts (gateway/ops/request-metrics.ts), read from finished request
 * records: series per (surface, model, provider, status class), latency buckets (upper bounds
 * inclusive, as Prometheus' `le`), unknown model names folded into `unknown`, offloads per model
 * and reason. The scrape that formats them is tested against a real gateway
 * (test/integration/gateway-metrics.test.ts).
 */
import assert from 'node:assert/strict';
import { LATENCY_BUCKETS, RequestMetrics } from '../../gateway/ops/request-metrics';
import { RegistryHolder } from '../../gateway/registry/holder';
import type { Model, Registry } from '../../gateway/registry/types';
import { requestRecord, type RecordFields } from '../support/request-log-fakes';

function metrics(): RequestMetrics {
  const model = { id: 'm' } as Model;
  const registry = { source: 'test', models: [model], byName: new Map([['m', model], ['m-alias', model]]), routesConfigured: 2 } as Registry;
  return new RequestMetrics(new RegistryHolder(registry));
}

const routed = { provider: 'p', base_url: 'http://u/v1', endpoint_id: 'ep' };

function finished(fields: RecordFields) {
  return requestRecord({ status: 200, latencyMs: 20, model: 'm', routing: routed, ...fields });
}

describe('gateway metrics: request counts', () => {
  it('keeps one series per surface, model, provider and status class, aliases under their model', () => {
    const m = metrics();
    m.observe(finished({}));
    m.observe(finished({ model: 'm-alias' }));
    m.observe(finished({ status: 502, routing: undefined }));
    m.observe(finished({ status: 499 }));
    m.observe(finished({ path: '/v1/embeddings' }));
    const series = [...m.all()].map((s) => `${s.surface} ${s.model} ${s.provider} ${s.statusClass} ${s.count}`).sort();
    assert.deepEqual(series, ['chat m none 5xx 1', 'chat m p 2xx 2', 'chat m p 4xx 1', 'embeddings m p 2xx 1']);
  });

  it('names models the registry does not know `unknown`, never the client string', () => {
    const m = metrics();
    m.observe(finished({ model: 'made-up', status: 404, routing: undefined }));
    m.observe(finished({ model: undefined, status: 401, routing: undefined }));
    assert.deepEqual([...m.all()].map((s) => [s.model, s.statusClass, s.count]), [['unknown', '4xx', 2]]);
  });

  it('puts each latency in the first bucket whose bound is at least it, the sum in seconds', () => {
    const m = metrics();
    for (const ms of [5, 5.0001, 300_000, 400_000]) m.observe(finished({ latencyMs: ms }));
    const [s] = [...m.all()];
    assert.equal(s!.buckets[0], 1, '5 ms is in le="0.005"');
    assert.equal(s!.buckets[1], 1, 'just above goes to the next');
    assert.equal(s!.buckets[LATENCY_BUCKETS.length - 1], 1, '300 s in the last bound');
    assert.equal(s!.buckets[LATENCY_BUCKETS.length], 1, 'beyond: +Inf only');
    assert.equal(s!.count, 4);
    assert.ok(Math.abs(s!.sumSeconds - (0.005 + 0.0050001 + 300 + 400)) < 1e-9);
  });

  it('counts offloads per model and reason', () => {
    const m = metrics();
    m.observe(finished({ routing: { ...routed, offload: { queue_wait: true } } }));
    m.observe(finished({ routing: { ...routed, offload: { queue_wait: true } } }));
    m.observe(finished({ routing: { ...routed, offload: { last_resort: true, offload_endpoint_id: 'ep-off' } } }));
    m.observe(finished({}));
    assert.deepEqual([...m.offloads.entries()], [['m', 'queue_wait', 2], ['m', 'last_resort', 1]]);
  });
});
