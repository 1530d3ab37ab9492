/**
 * What the hot path counts for `/metrics` (docs/metrics.md), kept in plain objects and read by the
 * scrape: requests and their latency per (surface, model, provider, status class), offloads per
 * (model, reason), and upstream answers per (provider, status). prom-client's own children hash
 * their label object on every `inc`/`observe` (several allocations each), so the request path
 * here does a few `Map.get`s on nested maps keyed by strings it already holds, and an array
 * index; a new label combination allocates its series once. Labels are bounded: the model is a
 * registry id (a name the registry does not know is `unknown`), the provider a configured label,
 * the surface one of the inference surfaces.
 */
import type { RegistryHolder } from '../registry/holder';
import type { OffloadAttribution } from '../routing/offload';
import type { RequestRecord } from '../surfaces/request-record';

/** Upper bounds (seconds) of the request latency histogram; `+Inf` is implied. */
export const LATENCY_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Label value of a request no route answered, or of a model the registry does not know. */
export const NO_PROVIDER = 'none';
export const UNKNOWN_MODEL = 'unknown';

/** Status classes by `status / 100`; index 0 (no status) counts as `5xx`, as it cannot be an answer. */
const STATUS_CLASSES = ['5xx', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** One label combination's count, latency sum and per-bucket counts (not cumulative). */
export class RequestSeries {
  count = 0;
  sumSeconds = 0;
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  constructor(readonly surface: string, readonly model: string, readonly provider: string, readonly statusClass: string) {}

  observe(seconds: number): void {
    this.count += 1;
    this.sumSeconds += seconds;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i += 1;
    this.buckets[i]! += 1;
  }
}

/** A count keyed by two label values. */
export class PairCounts<K extends string | number = string> {
  private readonly byFirst = new Map<string, Map<K, number>>();

  add(first: string, second: K): void {
    let inner = this.byFirst.get(first);
    if (!inner) this.byFirst.set(first, (inner = new Map<K, number>()));
    inner.set(second, (inner.get(second) ?? 0) + 1);
  }

  /** Every (first, second, count), for the scrape. */
  *entries(): IterableIterator<[string, K, number]> {
    for (const [first, inner] of this.byFirst) for (const [second, n] of inner) yield [first, second, n];
  }
}

type SeriesByClass = Array<RequestSeries | undefined>;

export class RequestMetrics {
  private readonly series = new Map<string, Map<string, Map<string, SeriesByClass>>>();
  /** Offloaded requests per (model, reason). */
  readonly offloads = new PairCounts();
  /** Upstream attempts per (provider, status): the upstream's HTTP status, `2xx` for a success, `none` without an HTTP answer. */
  readonly upstream = new PairCounts<string | number>();

  constructor(private readonly registry: RegistryHolder) {}

  /** Counts one finished request (after `record.end`). */
  observe(record: RequestRecord): void {
    const model = this.modelLabel(record.model);
    const provider = record.routing?.provider ?? NO_PROVIDER;
    const index = record.status >= 100 && record.status < 600 ? (record.status / 100) | 0 : 0;
    const byClass = this.classes(record.surface, model, provider);
    const series = (byClass[index] ??= new RequestSeries(record.surface, model, provider, STATUS_CLASSES[index]!));
    series.observe(record.latencyMs / 1000);
    const offload = record.routing?.offload;
    if (offload !== undefined) this.offloads.add(model, offloadReason(offload));
  }

  /** Every series with at least one request, for the scrape. */
  *all(): IterableIterator<RequestSeries> {
    for (const byModel of this.series.values()) {
      for (const byProvider of byModel.values()) {
        for (const byClass of byProvider.values()) for (const s of byClass) if (s) yield s;
      }
    }
  }

  private modelLabel(name: string | undefined): string {
    if (name === undefined) return UNKNOWN_MODEL;
    return this.registry.current.byName.get(name)?.id ?? UNKNOWN_MODEL;
  }

  private classes(surface: string, model: string, provider: string): SeriesByClass {
    let byModel = this.series.get(surface);
    if (!byModel) this.series.set(surface, (byModel = new Map<string, Map<string, SeriesByClass>>()));
    let byProvider = byModel.get(model);
    if (!byProvider) byModel.set(model, (byProvider = new Map<string, SeriesByClass>()));
    let byClass = byProvider.get(provider);
    if (!byClass) byProvider.set(provider, (byClass = []));
    return byClass;
  }
}

/** The reason flag of an offload attribution (`queue_wait`, `engine_wait`, `last_resort`). */
function offloadReason(offload: OffloadAttribution): string {
  if (offload.queue_wait) return 'queue_wait';
  if (offload.engine_wait) return 'engine_wait';
  if (offload.last_resort) return 'last_resort';
  return UNKNOWN_MODEL;
}
