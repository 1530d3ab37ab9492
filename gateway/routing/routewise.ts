/**
 * The cost-aware strategy `routewise` (docs/routewise.md; issue items 8–9): orders a model's routes
 * so the capacity already paid for is used first. Pure: live pool state, settings, the clock and
 * the random source are passed in. Order, each tier a fallback for the previous:
 *
 * 1. `provider_type: concurrency` routes whose pool has a free slot under `concurrency: {limit}`;
 * 2. `quota` routes whose quota pool has budget left under `quota: {limit}`;
 * 3. `on_demand` routes (and untyped routes, and paid routes whose limit is unknown) by the
 *    expected cost of a request at the pricing in force now, cheapest first, unpriced last;
 * 4. last resort: paid routes whose pool is full or whose budget is spent.
 *
 * Within a tier, and among on-demand routes of equal price (or within the `balanced` price band),
 * the order is a weighted draw. Weight-0 routes are never used. Algorithm and keys: `docs/routewise.md`.
 */
import type { Model, Route } from '../registry';
import type { Pricing } from '../registry/types';
import { costOf } from '../request-log/cost';
import { weightedOrder, type Rng } from './weighted-order';

/** What a quota pool counts, per finished request. */
export const QUOTA_UNITS = ['requests', 'tokens', 'prompt_tokens', 'completion_tokens', 'usd'] as const;
export type QuotaUnit = (typeof QUOTA_UNITS)[number];

/** `quota_source` with its defaults applied; the quota ledger is keyed by all three, matched exactly. */
export interface QuotaSource {
  provider: string;
  usage_label: string;
  unit: QuotaUnit;
}

/** Per-model settings: `router_params` overlaid by `/admin/routewise/model-settings`. */
export interface RoutewiseSettings {
  /** `cost` (default): cheapest on-demand first; `balanced`: prices within 25 % count as equal; `latency`: on-demand by weight only. */
  objective?: 'cost' | 'latency' | 'balanced' | undefined;
  /** Pool name → concurrency limit, overriding the routes' `concurrency: {limit}`. */
  concurrency_limits?: Readonly<Record<string, number>> | undefined;
  /** Pool name → quota limit, overriding the routes' `quota: {limit}`. */
  quota_limits?: Readonly<Record<string, number>> | undefined;
  /** Seconds between latency-probe rounds of the model; absent or 0: not probed. */
  probe_interval_seconds?: number | undefined;
  /** A route whose recent probe took longer (or failed) is tried last in its tier. */
  max_latency_ms?: number | undefined;
}

/** Live pool state as the strategy reads it. */
export interface PoolView {
  /** Requests in flight in a concurrency pool. */
  inFlight(pool: string): number;
  /** Quota used today under a source. */
  quotaUsed(source: QuotaSource): number;
}

/** The request shape prices are compared on (no request body is read by the strategy). */
export const PRICE_PROFILE = { prompt_tokens: 1000, completion_tokens: 250 } as const;

const BALANCED_BAND = 1.25;

function usableLimit(limit: unknown): number | undefined {
  return typeof limit === 'number' && Number.isFinite(limit) && limit >= 0 ? limit : undefined;
}

function limitOf(value: unknown): number | undefined {
  return usableLimit((value as { limit?: unknown } | undefined)?.limit);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The concurrency pool of a route: `concurrency_pool`, else `routewise_pool`, else its endpoint. */
export function concurrencyPool(route: Route): string {
  return text(route.costMetadata.concurrency_pool) ?? text(route.costMetadata.routewise_pool) ?? route.endpointId;
}

/** The quota pool name of a route: `quota_pool`, else `routewise_pool`, else its endpoint. */
export function quotaPool(route: Route): string {
  return text(route.costMetadata.quota_pool) ?? text(route.costMetadata.routewise_pool) ?? route.endpointId;
}

/** `quota_source` with defaults: provider = the route's label, usage_label = its quota pool, unit = requests. */
export function quotaSource(route: Route): QuotaSource {
  const raw = (route.costMetadata.quota_source ?? {}) as Partial<Record<keyof QuotaSource, unknown>>;
  const unit = QUOTA_UNITS.includes(raw.unit as QuotaUnit) ? (raw.unit as QuotaUnit) : 'requests';
  return { provider: text(raw.provider) ?? route.providerLabel, usage_label: text(raw.usage_label) ?? quotaPool(route), unit };
}

/** Ledger key of a source: the three fields, exactly as written. */
export function sourceKey(source: QuotaSource): string {
  return `${source.provider}\u0000${source.usage_label}\u0000${source.unit}`;
}

/** The concurrency limit of a route's pool (settings win), or undefined when unknown. */
export function concurrencyLimit(route: Route, settings: RoutewiseSettings): number | undefined {
  return usableLimit(settings.concurrency_limits?.[concurrencyPool(route)]) ?? limitOf(route.costMetadata.concurrency);
}

/** The quota limit of a route's pool (settings win), or undefined when unknown. */
export function quotaLimit(route: Route, settings: RoutewiseSettings): number | undefined {
  return usableLimit(settings.quota_limits?.[quotaPool(route)]) ?? limitOf(route.costMetadata.quota);
}

type Tier = 'concurrency' | 'quota' | 'on_demand' | 'exhausted';

/** Which tier a route falls in now. */
export function tierOf(route: Route, pools: PoolView, settings: RoutewiseSettings): Tier {
  if (route.providerType === 'concurrency') {
    const limit = concurrencyLimit(route, settings);
    if (limit === undefined) return 'on_demand';
    return pools.inFlight(concurrencyPool(route)) < limit ? 'concurrency' : 'exhausted';
  }
  if (route.providerType === 'quota') {
    const limit = quotaLimit(route, settings);
    if (limit === undefined) return 'on_demand';
    return pools.quotaUsed(quotaSource(route)) < limit ? 'quota' : 'exhausted';
  }
  return 'on_demand';
}

/** Expected USD cost of a {@link PRICE_PROFILE} request at `at`; undefined when unpriced. */
export function expectedCost(pricing: Pricing | undefined, at: number): number | undefined {
  return costOf(pricing, PRICE_PROFILE, { at }) ?? undefined;
}

/** On-demand routes: price bands in ascending order, a weighted draw inside each band. */
function byPrice(routes: Route[], at: number, objective: RoutewiseSettings['objective'], rng: Rng): Route[] {
  if (objective === 'latency') return weightedOrder(routes, rng);
  const band = objective === 'balanced' ? BALANCED_BAND : 1;
  const priced = routes.map((route) => ({ route, usd: expectedCost(route.pricing, at) ?? Infinity })).sort((a, b) => a.usd - b.usd);
  const ordered: Route[] = [];
  for (let i = 0; i < priced.length;) {
    const floor = priced[i]!.usd;
    let j = i;
    while (j < priced.length && (priced[j]!.usd === floor || priced[j]!.usd <= floor * band)) j += 1;
    ordered.push(...weightedOrder(priced.slice(i, j).map((p) => p.route), rng));
    i = j;
  }
  return ordered;
}

/** `ordered` with the demoted routes moved to the end, each part keeping its order. */
function demote(ordered: Route[], demoted: ((route: Route) => boolean) | undefined): Route[] {
  if (!demoted) return ordered;
  const kept: Route[] = [];
  const last: Route[] = [];
  for (const route of ordered) (demoted(route) ? last : kept).push(route);
  return last.length === 0 ? ordered : [...kept, ...last];
}

/**
 * The routewise order of `model`'s routes now. `demoted` (the latency prober's verdict: a recent
 * probe failed or was slower than `max_latency_ms`) moves a route after the others of its tier;
 * it is never removed.
 */
export function routewiseOrder(
  model: Pick<Model, 'routes'>,
  input: { pools: PoolView; settings: RoutewiseSettings; at: number; rng: Rng; demoted?: ((route: Route) => boolean) | undefined },
): Route[] {
  const tiers: Record<Tier, Route[]> = { concurrency: [], quota: [], on_demand: [], exhausted: [] };
  for (const route of model.routes) {
    if (route.weight > 0) tiers[tierOf(route, input.pools, input.settings)].push(route);
  }
  const d = input.demoted;
  return [
    ...demote(weightedOrder(tiers.concurrency, input.rng), d),
    ...demote(weightedOrder(tiers.quota, input.rng), d),
    ...demote(byPrice(tiers.on_demand, input.at, input.settings.objective, input.rng), d),
    ...demote(tiers.exhausted.filter((r) => r.providerType === 'concurrency'), d),
    ...demote(tiers.exhausted.filter((r) => r.providerType === 'quota'), d),
  ];
}

/** `ENABLE_ROUTEWISE=true` (deprecated): the cost-aware router becomes the default when `default_router` is `fixed`. */
export function effectiveDefaultRouter(defaultRouter: string, enableRoutewise: boolean): string {
  return enableRoutewise && defaultRouter === 'fixed' ? 'routewise' : defaultRouter;
}
