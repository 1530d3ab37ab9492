/**
 * Live state of the routewise pools in this process: requests in flight per concurrency pool
 * (acquired before an attempt, released when it fails or when the response closes) and quota used
 * today (UTC) per quota source, from finished requests. Memory only on the hot path. So a restart
 * does not forget the day's quota use, and so other gateway processes' use is seen,
 * {@link RoutewisePools.seed} reads today's totals back from `api_logs` (the request log is the
 * durable record; no extra table or write) at startup and then periodically.
 */
import type { Db } from '../../lib/db';
import type { Registry, Route } from '../registry';
import { costOf } from '../request-log/cost';
import type { Usage } from '../surfaces/usage';
import { concurrencyPool, quotaSource, sourceKey, type PoolView, type QuotaSource } from './routewise';

const DAY_MS = 86_400_000;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The amount a finished request adds to a quota source of `unit`. */
export function quotaAmount(source: QuotaSource, route: Route, usage: Usage | undefined, at: number): number {
  switch (source.unit) {
    case 'requests': return 1;
    case 'prompt_tokens': return count(usage?.prompt_tokens);
    case 'completion_tokens': return count(usage?.completion_tokens);
    case 'tokens': return count(usage?.prompt_tokens) + count(usage?.completion_tokens);
    case 'usd': return costOf(route.pricing, usage, { at }) ?? 0;
  }
}

export class RoutewisePools implements PoolView {
  private readonly inFlightByPool = new Map<string, number>();
  private readonly used = new Map<string, number>();
  private day: number;

  constructor(private readonly now: () => number = Date.now) {
    this.day = Math.floor(now() / DAY_MS);
  }

  inFlight(pool: string): number {
    return this.inFlightByPool.get(pool) ?? 0;
  }

  quotaUsed(source: QuotaSource): number {
    this.rollDay();
    return this.used.get(sourceKey(source)) ?? 0;
  }

  /** What this process holds now: in-flight requests per concurrency pool, today's use per quota source. */
  snapshot(): { in_flight: Record<string, number>; quota_used: Array<QuotaSource & { used: number }> } {
    this.rollDay();
    return {
      in_flight: Object.fromEntries(this.inFlightByPool),
      quota_used: [...this.used].map(([key, used]) => {
        const [provider = '', usage_label = '', unit = 'requests'] = key.split('\u0000');
        return { provider, usage_label, unit: unit as QuotaSource['unit'], used };
      }),
    };
  }

  /** Takes a slot of the route's concurrency pool; the returned release is idempotent. */
  acquire(route: Route): () => void {
    const pool = concurrencyPool(route);
    this.inFlightByPool.set(pool, this.inFlight(pool) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.inFlight(pool) - 1;
      if (left <= 0) this.inFlightByPool.delete(pool);
      else this.inFlightByPool.set(pool, left);
    };
  }

  /** Adds `amount` to a quota source's use today (also for usage reported by other means). */
  add(source: QuotaSource, amount: number): void {
    if (!(amount > 0)) return;
    this.rollDay();
    const key = sourceKey(source);
    this.used.set(key, (this.used.get(key) ?? 0) + amount);
  }

  /** Charges a finished request on `route` to its quota source (quota routes only). */
  record(route: Route, usage: Usage | undefined): void {
    if (route.providerType !== 'quota') return;
    const source = quotaSource(route);
    this.add(source, quotaAmount(source, route, usage, this.now()));
  }

  private rollDay(): void {
    const day = Math.floor(this.now() / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.used.clear();
    }
  }

  /**
   * Reads today's quota use from `api_logs` (answered rows with a status below 400 since 00:00 UTC,
   * grouped by endpoint) for every quota route of `registry`. Each source keeps the larger of what
   * memory holds and what the log says: the log includes every process's flushed rows, memory this
   * process's requests not yet flushed. Off the hot path (startup, then a timer).
   */
  async seed(db: Db, registry: Registry): Promise<void> {
    const quotaRoutes = new Map<string, Route>();
    for (const model of registry.models) for (const r of model.routes) if (r.providerType === 'quota') quotaRoutes.set(r.endpointId, r);
    if (quotaRoutes.size === 0) return;
    const since = new Date(Math.floor(this.now() / DAY_MS) * DAY_MS);
    const rows = await db('api_logs')
      .select<Array<{ endpoint_id: string; requests: string; prompt: string | null; completion: string | null; usd: string | null }>>(
        'endpoint_id', db.raw('count(*) as requests'), db.raw('sum(prompt_tokens) as prompt'),
        db.raw('sum(completion_tokens) as completion'), db.raw('sum(cost_usd) as usd'),
      )
      .whereIn('endpoint_id', [...quotaRoutes.keys()]).andWhere('created_at', '>=', since).andWhere('status', '<', 400).groupBy('endpoint_id');
    const logged = new Map<string, { source: QuotaSource; amount: number }>();
    for (const row of rows) {
      const source = quotaSource(quotaRoutes.get(row.endpoint_id)!);
      const prompt = Number(row.prompt ?? 0);
      const completion = Number(row.completion ?? 0);
      const amounts: Record<QuotaSource['unit'], number> = {
        requests: Number(row.requests), prompt_tokens: prompt, completion_tokens: completion, tokens: prompt + completion, usd: Number(row.usd ?? 0),
      };
      const key = sourceKey(source);
      logged.set(key, { source, amount: (logged.get(key)?.amount ?? 0) + amounts[source.unit] });
    }
    this.rollDay();
    for (const [key, { amount }] of logged) this.used.set(key, Math.max(this.used.get(key) ?? 0, amount));
  }
}
