/**
 * The routing core of one gateway process: orders a model's candidate routes for a request
 * (affinity pin first, else the model's strategy, with prefill-aware power-of-two choice for
 * `fixed`) and hears every attempt's outcome through a per-request {@link RoutingTicket}
 * (breaker admission and records, affinity pins, prefill backlog). Strategies are pure functions
 * chosen by `model.router`, so the cost-aware `routewise` strategy slots in beside `fixed`.
 */
import type { Logger } from '../../lib/logger';
import type { Model, Route } from '../registry';
import type { UpstreamError } from '../upstream/upstream-error';
import { AffinityTable } from './affinity';
import { countsAgainstBreaker, type CircuitBreakers } from './breaker';
import type { AttemptObserver } from './fallback';
import { preferLighter, type PrefillTracker } from './prefill';
import { weightedOrder, type Rng } from './weighted-order';

/** What a strategy knows about the request. */
export interface StrategyContext {
  /** The model being routed (strategies read its settings, never mutate it). */
  model: Model;
  rng: Rng;
  prefill: PrefillTracker;
  /** Estimated prompt tokens of the request. */
  promptTokens: number;
  elephant: boolean;
}

/**
 * Orders candidate routes (all of weight > 0, none excluded) into the try order. Pure: no
 * clock or randomness of its own.
 */
export type RoutingStrategy = (routes: readonly Route[], context: StrategyContext) => Route[];

/** `fixed`: a weighted draw order, then power-of-two choice on the prefill backlog. */
export const fixedStrategy: RoutingStrategy = (routes, context) => preferLighter(weightedOrder(routes, context.rng), context.prefill, context.elephant);

export interface RoutingCoreOptions {
  breakers: CircuitBreakers;
  affinity: AffinityTable;
  prefill: PrefillTracker;
  rng: Rng;
  /** Backlog above which a pinned endpoint is skipped for one request (`ROUTING_PREFILL_AFFINITY_CEILING`). */
  affinityCeilingTokens: number;
  /** Strategies by router name; `fixed` is the default. */
  strategies?: ReadonlyMap<string, RoutingStrategy>;
  /** Router of models that name none (the routing file's `default_router`, `ENABLE_ROUTEWISE`). Default `fixed`. */
  defaultRouter?: string;
}

/** Counts upstream answers per (provider label, status): the HTTP status, `2xx` for a success, `none` without an HTTP answer. */
export interface UpstreamAnswerCounter {
  add(provider: string, status: string | number): void;
}

/** What the surface knows about the request when asking for a route order. */
export interface RoutingRequest {
  /** `affinityKey(...)` of the caller (docs/client-address.md), or undefined (no affinity). */
  callerKey: string | undefined;
  promptTokens: number;
  /** An honoured synthetic probe: no routing observation is recorded. */
  synthetic: boolean;
}

export class RoutingCore {
  readonly breakers: CircuitBreakers;
  readonly affinity: AffinityTable;
  readonly prefill: PrefillTracker;
  private readonly strategies: ReadonlyMap<string, RoutingStrategy>;
  /** Hears every upstream attempt's answer (the metrics' `gateway_upstream_responses_total`); absent: not counted. */
  upstreamAnswers: UpstreamAnswerCounter | undefined = undefined;

  constructor(private readonly options: RoutingCoreOptions) {
    this.breakers = options.breakers;
    this.affinity = options.affinity;
    this.prefill = options.prefill;
    this.strategies = options.strategies ?? new Map([['fixed', fixedStrategy]]);
  }

  private strategyFor(model: Model): RoutingStrategy {
    return this.strategies.get(model.router ?? this.options.defaultRouter ?? 'fixed') ?? this.strategies.get('fixed') ?? fixedStrategy;
  }

  /** The try order for a request and the ticket that hears its attempts. */
  plan(model: Model, request: RoutingRequest): RoutingTicket {
    const callerModel = request.callerKey !== undefined ? AffinityTable.key(request.callerKey, model.id) : undefined;
    const pinKey = this.affinity.enabled ? callerModel : undefined;
    const elephant = this.prefill.isElephant(request.promptTokens);
    const context: StrategyContext = { model, rng: this.options.rng, prefill: this.prefill, promptTokens: request.promptTokens, elephant };
    const strategy = this.strategyFor(model);
    let order: Route[] | undefined;
    const pinnedId = pinKey !== undefined ? this.affinity.lookup(pinKey) : undefined;
    if (pinnedId !== undefined) {
      const pinned = model.routes.find((r) => r.endpointId === pinnedId);
      if (!pinned || pinned.weight <= 0 || this.breakers.isOpen(pinnedId)) {
        this.affinity.drop(pinKey!);
      } else {
        const rest = strategy(model.routes.filter((r) => r !== pinned && r.weight > 0 && !this.breakers.isOpen(r.endpointId)), context);
        // Above the ceiling the pin is abandoned for this request: the rest first, the pinned endpoint last.
        order = this.prefill.enabled && this.prefill.backlog(pinnedId) > this.options.affinityCeilingTokens ? [...rest, pinned] : [pinned, ...rest];
      }
    }
    order ??= this.freshOrder(model.routes, strategy, context);
    return new RoutingTicket(this, order, { pinKey, memoryKey: callerModel }, request, elephant);
  }

  /**
   * A ticket for a fixed try order (embeddings' ordered chain, an `X-Route-Pin`): breaker
   * admission and records only; no affinity, no prefill accounting.
   */
  fixedOrder(routes: Route[], synthetic: boolean): RoutingTicket {
    return new RoutingTicket(this, routes, {}, { callerKey: undefined, promptTokens: 0, synthetic }, false);
  }

  /** Strategy order with endpoints whose circuit is open moved last (still named in a 503). */
  private freshOrder(routes: readonly Route[], strategy: RoutingStrategy, context: StrategyContext): Route[] {
    const usable = routes.filter((r) => r.weight > 0);
    const open = usable.filter((r) => this.breakers.isOpen(r.endpointId));
    if (open.length === 0) return strategy(usable, context);
    return [...strategy(usable.filter((r) => !open.includes(r)), context), ...open];
  }
}

/**
 * One request's view of the routing core: the try order, and the {@link AttemptObserver} the
 * fallback driver reports to. One object per request; no closures.
 */
export class RoutingTicket implements AttemptObserver {
  private failedAny = false;
  /** The running attempt is the half-open test request of its endpoint. */
  private probing = false;
  /** Un-cached tokens the running attempt added to its endpoint's backlog. */
  private inPrefill = 0;
  /** The caller's affinity table key (absent: no caller key, or affinity off). */
  private readonly pinKey: string | undefined;
  /** The caller × model key of the prompt-size memory (kept with affinity off). */
  private readonly memoryKey: string | undefined;
  /** An endpoint a success never pins the caller to (the model's offload route, kept out of rotation). */
  unpinned: string | undefined;

  constructor(
    private readonly core: RoutingCore,
    readonly routes: Route[],
    keys: { pinKey?: string | undefined; memoryKey?: string | undefined },
    private readonly request: RoutingRequest,
    private readonly elephant: boolean,
  ) {
    this.pinKey = keys.pinKey;
    this.memoryKey = keys.memoryKey;
  }

  admit(route: Route): boolean {
    const admission = this.core.breakers.admit(route.endpointId, !this.request.synthetic);
    if (admission === false) return false;
    this.probing = admission === 'probe';
    if (this.core.prefill.enabled) {
      this.inPrefill = this.core.prefill.uncached(this.memoryKey, route.endpointId, this.request.promptTokens);
      this.core.prefill.start(route.endpointId, this.inPrefill, this.elephant);
    }
    return true;
  }

  private endPrefill(route: Route): void {
    if (this.core.prefill.enabled) this.core.prefill.finish(route.endpointId, this.inPrefill, this.elephant);
  }

  succeeded(route: Route): void {
    this.endPrefill(route);
    this.core.upstreamAnswers?.add(route.providerLabel, '2xx');
    if (this.request.synthetic) return;
    this.core.breakers.record(route.endpointId, true, this.probing);
    this.core.breakers.clearCredentialRejected(route.endpointId);
    if (this.memoryKey !== undefined && this.core.prefill.enabled) this.core.prefill.remember(this.memoryKey, route.endpointId, this.request.promptTokens);
    // A request that needed fallback does not pin: the next request re-picks.
    if (this.pinKey !== undefined && !this.failedAny && route.endpointId !== this.unpinned) this.core.affinity.pin(this.pinKey, route.endpointId);
  }

  failed(route: Route, err: UpstreamError): void {
    this.endPrefill(route);
    this.core.upstreamAnswers?.add(route.providerLabel, err.options.upstreamStatus ?? 'none');
    this.failedAny = true;
    if (this.request.synthetic) return;
    if (this.pinKey !== undefined && this.core.affinity.lookup(this.pinKey) === route.endpointId) this.core.affinity.drop(this.pinKey);
    if (err.options.upstreamStatus === 401) this.core.breakers.markCredentialRejected(route.endpointId);
    if (countsAgainstBreaker(err)) this.core.breakers.record(route.endpointId, false, this.probing);
    else if (this.probing) this.core.breakers.abandon(route.endpointId);
  }

  abandoned(route: Route): void {
    this.endPrefill(route);
    if (this.probing) this.core.breakers.abandon(route.endpointId);
  }

  describeRefused(routes: readonly Route[]): string {
    return `no admissible route; endpoints: ${routes.map((r) => {
      const s = this.core.breakers.snapshot(r.endpointId);
      return `${r.endpointId} (${r.providerLabel}, circuit ${s.state}${s.probe_in_flight ? ', probe in flight' : ''})`;
    }).join(', ')}`;
  }
}

/** Logs circuit changes: opening at WARNING, closing (recovery) at INFO. */
export function logCircuitChanges(breakers: CircuitBreakers, log: Logger): void {
  breakers.onChange((e) => {
    const fields = { event: e.type, endpoint_id: e.endpointId, availability: Number(e.availability.toFixed(3)), consecutive_failures: e.consecutiveFailures, reason: e.reason };
    if (e.type === 'circuit_open') log.warn(fields, `circuit_open: endpoint ${e.endpointId} stops receiving requests (${e.reason})`);
    else if (e.type === 'circuit_closed') log.info(fields, `circuit_closed: endpoint ${e.endpointId} recovered`);
    else log.info(fields, `circuit_half_open: endpoint ${e.endpointId} admits one test request`);
  });
}
