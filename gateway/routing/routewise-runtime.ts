/**
 * The routewise strategy as the chat path uses it: which models it applies to, their order now
 * (pure {@link routewiseOrder} over this process's pools and the model's settings), and the
 * acquire/release of a concurrency slot around each attempt, with the finished request charged
 * to its quota pool when the response closes.
 */
import type { ServerResponse } from 'node:http';
import type { Db } from '../../lib/db';
import type { Model, Registry, Route } from '../registry';
import type { Usage } from '../surfaces/usage';
import { routewiseOrder, type RoutewiseSettings } from './routewise';
import { RoutewisePools } from './routewise-pools';
import { RoutewiseProber, type ProberStartOptions } from './routewise-prober';
import type { RoutingStrategy } from './selector';
import type { Rng } from './weighted-order';

export interface RoutewiseOptions {
  /** The router of models that name none (the routing file's `default_router`, after `ENABLE_ROUTEWISE`). */
  defaultRouter?: string;
  now?: () => number;
  /** Longest wait for a latency probe's answer (default `PROBE_TIMEOUT_MS`). */
  probeTimeoutMs?: number;
}

/** Where an attempt's response closes and its usage ends up. */
export interface AttemptScope {
  readonly res: ServerResponse;
  readonly state: { readonly usage?: Usage | undefined };
}

function onClose(res: ServerResponse, done: () => void): void {
  if (res.destroyed || res.writableFinished) done();
  else res.once('close', done);
}

export class Routewise {
  readonly pools: RoutewisePools;
  /** The latency prober (`router_params.probe_interval_seconds`); its results demote routes within their tier. */
  readonly prober: RoutewiseProber;
  private timer: NodeJS.Timeout | undefined;
  /** `routewise_model_settings` as stored (model id → settings); read per request, memory only. Set by the assembly. */
  storedSettings: () => unknown = () => undefined;
  private readonly now: () => number;

  constructor(private readonly options: RoutewiseOptions = {}) {
    this.now = options.now ?? Date.now;
    this.pools = new RoutewisePools(this.now);
    this.prober = new RoutewiseProber(this.now, options.probeTimeoutMs);
  }

  /** Starts the latency prober (with or without a database: see {@link RoutewiseProber}). Off the hot path. */
  startProber(options: Omit<ProberStartOptions, 'applies' | 'params'>): void {
    this.prober.start({ ...options, applies: (model) => this.applies(model), params: (model) => this.settingsFor(model) });
  }

  /**
   * Reads today's quota use from the request log now, then every `refreshMs` (failures are
   * logged by `onError` and retried at the next tick). Off the hot path.
   */
  async start(options: { db: Db; registry: () => Registry; refreshMs: number; onError: (err: unknown) => void }): Promise<void> {
    if (this.timer) return;
    const refresh = () => this.pools.seed(options.db, options.registry());
    this.timer = setInterval(() => void refresh().catch(options.onError), options.refreshMs);
    this.timer.unref();
    await refresh().catch(options.onError);
  }

  /** Stops the quota refresh and the prober (probes in flight are aborted, their leases released). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.prober.stop();
  }

  /** Whether `model` is routed by routewise (named, or by default). */
  applies(model: Model): boolean {
    return (model.router ?? this.options.defaultRouter ?? 'fixed') === 'routewise';
  }

  /** `router_params` overlaid by the admin's `/admin/routewise/model-settings` entry of the model. */
  settingsFor(model: Model): RoutewiseSettings {
    const stored = this.storedSettings() as Record<string, RoutewiseSettings> | undefined;
    const own = stored?.[model.id];
    const params = model.routerParams as Pick<RoutewiseSettings, 'objective' | 'probe_interval_seconds' | 'max_latency_ms'>;
    return {
      objective: own?.objective ?? params.objective, concurrency_limits: own?.concurrency_limits, quota_limits: own?.quota_limits,
      probe_interval_seconds: own?.probe_interval_seconds ?? params.probe_interval_seconds, max_latency_ms: own?.max_latency_ms ?? params.max_latency_ms,
    };
  }

  /** The strategy for the routing core: `routes` (the usable ones) in routewise order now. */
  strategy(): RoutingStrategy {
    return (routes, context) => routewiseOrder({ routes }, {
      pools: this.pools, settings: this.settingsFor(context.model), at: this.now(), rng: context.rng, demoted: this.demotedIn(context.model),
    });
  }

  /** The model's routes in routewise order now. */
  order(model: Model, rng: Rng): Route[] {
    return routewiseOrder(model, { pools: this.pools, settings: this.settingsFor(model), at: this.now(), rng, demoted: this.demotedIn(model) });
  }

  private demotedIn(model: Model): (route: Route) => boolean {
    const settings = this.settingsFor(model);
    return (route) => this.prober.demoted(settings, route);
  }

  /**
   * Wraps an attempt: a slot of the route's concurrency pool is held from before the call until
   * the response closes (released at once when the attempt fails), and the finished request is
   * charged to the route's quota source. Models not routed by routewise get `attempt` unchanged.
   */
  tracked<T>(model: Model, scope: AttemptScope, attempt: (route: Route) => Promise<T>): (route: Route) => Promise<T> {
    if (!this.applies(model)) return attempt;
    return async (route) => {
      const release = this.pools.acquire(route);
      try {
        const value = await attempt(route);
        onClose(scope.res, () => {
          release();
          this.pools.record(route, scope.state.usage);
        });
        return value;
      } catch (err) {
        release();
        throw err;
      }
    };
  }
}
