/**
 * The gateway's Prometheus metrics (docs/metrics.md): its own prom-client `Registry` (never the
 * global one), every metric named `gateway_…`. Nothing here runs on the request path except
 * {@link RequestMetrics.observe} (plain counters). Everything else is read when scraped: the
 * request counters and latency histogram from those plain counters, circuit states from the
 * breakers, outbound concurrency from the limiter's lanes, the request log's queue, drops and
 * spool from its writer. Nothing touches the database, so a scrape answers during an outage.
 */
import { hash } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, type MetricType } from 'prom-client';
import type { RequestLogWriter } from '../request-log/writer';
import type { RegistryHolder } from '../registry/holder';
import type { CircuitBreakers, CircuitState } from '../routing/breaker';
import type { ConcurrencyLimiter } from '../routing/concurrency';
import { LATENCY_BUCKETS, RequestMetrics, type RequestSeries } from './request-metrics';

export interface GatewayMetricsDeps {
  registry: RegistryHolder;
  breakers: CircuitBreakers;
  concurrency: ConcurrencyLimiter;
  /** The request log's writer; absent without a request log (its metrics are then not exported). */
  requestLog?: () => RequestLogWriter | undefined;
}

/** `gateway_circuit_breaker_state` values. */
export const CIRCUIT_STATE_VALUES: Readonly<Record<CircuitState, number>> = { closed: 0, half_open: 1, open: 2 };

const REQUEST_LABELS = ['surface', 'model', 'provider', 'status_class'] as const;

function requestLabels(s: RequestSeries): Record<(typeof REQUEST_LABELS)[number], string> {
  return { surface: s.surface, model: s.model, provider: s.provider, status_class: s.statusClass };
}

const DURATION = 'gateway_request_duration_seconds';
const DURATION_HELP = 'Inference request latency, arrival to end of response, in seconds';

/** The latency histogram, read from the request series when scraped (prom-client's own observe is too slow for the hot path). */
class RequestDurationHistogram extends Histogram<string> {
  /**
   * prom-client's registry formats a histogram through its undocumented `getForPromString` when
   * the metric has one; hiding it makes the registry use {@link get}, the public contract.
   */
  readonly getForPromString = undefined;

  constructor(registry: Registry, private readonly source: RequestMetrics) {
    super({ name: DURATION, help: DURATION_HELP, labelNames: REQUEST_LABELS, buckets: [...LATENCY_BUCKETS], registers: [registry] });
  }

  override get(): ReturnType<Histogram<string>['get']> {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (const s of this.source.all()) {
      const labels = requestLabels(s);
      let cumulative = 0;
      for (let i = 0; i <= LATENCY_BUCKETS.length; i += 1) {
        cumulative += s.buckets[i]!;
        const le = i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : '+Inf';
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${DURATION}_bucket` });
      }
      values.push({ labels, value: s.sumSeconds, metricName: `${DURATION}_sum` }, { labels, value: s.count, metricName: `${DURATION}_count` });
    }
    // prom-client declares `type` as a numeric enum but formats (and itself returns) the string.
    return Promise.resolve({ name: DURATION, help: DURATION_HELP, type: 'histogram' as unknown as MetricType, aggregator: 'sum', collect: () => undefined, values });
  }
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: RequestMetrics;
  /** Key ids by concurrency lane id (`<provider>\n<key>`): hashed once per lane, never the key itself. */
  private readonly keyIds = new Map<string, { provider: string; keyId: string }>();

  constructor(private readonly deps: GatewayMetricsDeps) {
    this.requests = new RequestMetrics(deps.registry);
    const registers = [this.registry];
    const requests = this.requests;
    new Counter({
      name: 'gateway_requests_total', help: 'Inference requests finished, by surface, model, answering provider and status class',
      labelNames: REQUEST_LABELS, registers,
      collect() {
        this.reset();
        for (const s of requests.all()) this.inc(requestLabels(s), s.count);
      },
    });
    new RequestDurationHistogram(this.registry, requests);
    new Counter({
      name: 'gateway_upstream_responses_total', help: 'Upstream attempts by provider and upstream status (2xx: success; none: no HTTP answer)',
      labelNames: ['provider', 'status'], registers,
      collect() {
        this.reset();
        for (const [provider, status, n] of requests.upstream.entries()) this.inc({ provider, status: String(status) }, n);
      },
    });
    new Counter({
      name: 'gateway_offloads_total', help: 'Requests offloaded, by model and reason',
      labelNames: ['model', 'reason'], registers,
      collect() {
        this.reset();
        for (const [model, reason, n] of requests.offloads.entries()) this.inc({ model, reason }, n);
      },
    });
    this.defineRoutingGauges(registers);
    this.defineRequestLogMetrics(registers);
  }

  /** The text exposition (Prometheus 0.0.4) and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private defineRoutingGauges(registers: Registry[]): void {
    const { registry, breakers, concurrency } = this.deps;
    new Gauge({
      name: 'gateway_circuit_breaker_state', help: 'Circuit state per endpoint: 0 closed, 1 half_open, 2 open',
      labelNames: ['endpoint_id', 'provider'], registers,
      collect() {
        this.reset();
        const seen = new Set<string>();
        for (const model of registry.current.models) {
          for (const route of model.routes) {
            if (seen.has(route.endpointId)) continue;
            seen.add(route.endpointId);
            this.set({ endpoint_id: route.endpointId, provider: route.providerLabel }, CIRCUIT_STATE_VALUES[breakers.snapshot(route.endpointId).state]);
          }
        }
      },
    });
    const lanes = () => [...concurrency.allLanes()].map((lane) => ({ lane, ...this.laneLabels(lane.id) }));
    const laneGauge = (name: string, help: string, read: (l: ReturnType<typeof lanes>[number]['lane']) => number) => new Gauge({
      name, help, labelNames: ['provider', 'key_id'], registers,
      collect() {
        this.reset();
        for (const { lane, provider, keyId } of lanes()) this.set({ provider, key_id: keyId }, read(lane));
      },
    });
    laneGauge('gateway_upstream_concurrency_limit', 'Adaptive outbound concurrency limit per (provider, key id)', (l) => l.limit);
    laneGauge('gateway_upstream_concurrency_in_flight', 'Outbound requests in flight per (provider, key id)', (l) => l.inFlight);
    laneGauge('gateway_upstream_concurrency_waiting', 'Requests waiting for an outbound permit per (provider, key id)', (l) => l.waiters.length);
  }

  private defineRequestLogMetrics(registers: Registry[]): void {
    const writer = this.deps.requestLog;
    if (!writer) return;
    const gauge = (name: string, help: string, read: (w: RequestLogWriter) => number) => new Gauge({
      name, help, registers,
      collect() {
        const w = writer();
        if (w) this.set(read(w));
      },
    });
    gauge('gateway_request_log_queue_depth', 'Request-log rows waiting in memory', (w) => w.queued);
    gauge('gateway_request_log_spool_bytes', 'Bytes in the request-log spool and quarantine file', (w) => w.spoolBytes);
    new Counter({
      name: 'gateway_request_log_dropped_total', help: 'Request-log rows lost (spool full or unwritable, or unbuildable)', registers,
      collect() {
        const w = writer();
        if (!w) return;
        this.reset();
        this.inc(w.counters.dropped);
      },
    });
  }

  /** The provider and key id of a lane: the first 12 hex digits of the key's SHA-256 (`none` without a key). */
  private laneLabels(laneId: string): { provider: string; keyId: string } {
    let labels = this.keyIds.get(laneId);
    if (!labels) {
      const cut = laneId.indexOf('\n');
      const key = laneId.slice(cut + 1);
      labels = { provider: laneId.slice(0, cut), keyId: key === '' ? 'none' : hash('sha256', key, 'hex').slice(0, 12) };
      this.keyIds.set(laneId, labels);
    }
    return labels;
  }
}
