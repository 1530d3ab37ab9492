/**
 * The routewise latency prober (`router_params`, `routewise_probe_leases`; docs/routewise.md): for each
 * model routed `routewise` with `router_params.probe_interval_seconds` > 0, every interval this
 * process takes the model's probe lease and, only while holding it, sends `GET <base>/models` to
 * every probed route (weight > 0, not `on_demand`: the latency prober never probes those), timing
 * the answer. The lease is released after the round, so two workers never probe one model at the
 * same time. Results stay in this process's memory; {@link RoutewiseProber.demoted} tells the
 * strategy which routes to try last in their tier. Off the hot path: one unref'd timer, no
 * database access per request. Without a database there are no leases: this (single) process
 * probes without one. Design notes: docs/routewise.md.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { reachabilityUrl, resolveAdapterKind, upstreamHeaders } from '../adapters';
import type { Model, Registry, Route } from '../registry';
import { acquireProbeLease, releaseProbeLease } from './routewise-leases';

/** Longest wait for a probe answer; a probe without an answer by then failed. */
export const PROBE_TIMEOUT_MS = 5_000;
/** Upper bound of the timer's period (a model's round is never later than this after it is due). */
const MAX_TICK_MS = 1_000;
/** Lower bound of the timer's period. */
const MIN_TICK_MS = 20;
/**
 * A result older than this many probe periods no longer demotes a route. The period is the
 * interval, but at least the probe timeout: with several processes taking turns under the lease,
 * a process's own latest result can be a few rounds old.
 */
const FRESH_INTERVALS = 3;

/** The last probe of one route. */
export interface ProbeResult {
  /** Whether the upstream answered (any status below 500) within the timeout. */
  ok: boolean;
  /** Time to the response headers (or to the failure), in milliseconds. */
  latencyMs: number;
  /** When the probe finished (the prober's clock). */
  at: number;
}

function positive(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** `router_params.probe_interval_seconds` in milliseconds; undefined (no probing) unless a positive number. */
export function probeIntervalMs(routerParams: ProbeParams): number | undefined {
  const seconds = positive(routerParams.probe_interval_seconds);
  return seconds === undefined ? undefined : seconds * 1000;
}

/** `router_params.max_latency_ms`; undefined unless a positive number. */
export function maxLatencyMs(routerParams: ProbeParams): number | undefined {
  return positive(routerParams.max_latency_ms);
}

/** The routes of `model` the prober probes: weight > 0 and not `on_demand` (a route inherits the model's `on_demand`). */
export function probedRoutes(model: Pick<Model, 'routes'>): Route[] {
  return model.routes.filter((r) => r.weight > 0 && !r.onDemand);
}

/**
 * The probe URL of a route: its upstream's model listing (beside the chat-completions or messages
 * path), or for a kind without one its model's resource (adapters/probe-urls.ts).
 */
export function probeUrl(route: Pick<Route, 'kind' | 'baseUrl'> & { providerModelId?: string }): string {
  return reachabilityUrl(resolveAdapterKind(route.kind), route.baseUrl, route.providerModelId ?? '');
}

/**
 * Whether a probe result demotes the route: recent (within {@link FRESH_INTERVALS} periods of
 * `max(interval, probe timeout)`) and either failed or slower than `maxLatency` (when set).
 */
export function isDemoted(result: ProbeResult | undefined, input: { now: number; intervalMs: number; maxLatencyMs: number | undefined }): boolean {
  if (!result || input.now - result.at > FRESH_INTERVALS * Math.max(input.intervalMs, PROBE_TIMEOUT_MS)) return false;
  return !result.ok || (input.maxLatencyMs !== undefined && result.latencyMs > input.maxLatencyMs);
}

/** One probe round as it happened (kept for the admin view and tests, last {@link ROUND_HISTORY}). */
export interface ProbeRound {
  modelId: string;
  startedAt: number;
  endedAt: number;
}
const ROUND_HISTORY = 100;

/** The keys the prober reads (from `router_params`, or the admin's model settings). */
export interface ProbeParams {
  probe_interval_seconds?: unknown;
  max_latency_ms?: unknown;
}

export interface ProberStartOptions {
  /** The database holding `routewise_probe_leases`; null without a database (probes without a lease). */
  db: Db | null;
  registry: () => Registry;
  /** Whether a model is routed by routewise now (named, or by default). */
  applies: (model: Model) => boolean;
  /** The model's probe settings in force (`router_params` overlaid by the admin's model settings). */
  params: (model: Model) => ProbeParams;
  log: Logger;
}

export class RoutewiseProber {
  /** endpoint id → last probe result. */
  private readonly results = new Map<string, ProbeResult>();
  /** model id → when its next round is due. */
  private readonly due = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopping: AbortController | undefined;
  private options: ProberStartOptions | undefined;
  /** Rounds this process ran (most recent last). */
  readonly rounds: ProbeRound[] = [];
  /** This process's lease holder name. */
  readonly holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(private readonly now: () => number = Date.now, private readonly timeoutMs = PROBE_TIMEOUT_MS) {}

  /** Starts the timer (idempotent). Models without a probe interval are never probed. */
  start(options: ProberStartOptions): void {
    if (this.timer) return;
    this.options = options;
    this.stopping = new AbortController();
    this.schedule(0);
  }

  /** Stops the timer, aborts probes in flight and waits for their rounds (which release their leases). */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stopping?.abort();
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** The last probe result of a route (by endpoint). */
  resultOf(route: Pick<Route, 'endpointId'>): ProbeResult | undefined {
    return this.results.get(route.endpointId);
  }

  /** Whether `route` is demoted now by its last probe under the model's `params` (see {@link isDemoted}). Memory only. */
  demoted(params: ProbeParams, route: Pick<Route, 'endpointId'>): boolean {
    const intervalMs = probeIntervalMs(params);
    if (intervalMs === undefined) return false;
    return isDemoted(this.results.get(route.endpointId), { now: this.now(), intervalMs, maxLatencyMs: maxLatencyMs(params) });
  }

  private schedule(delayMs: number): void {
    if (this.stopping?.signal.aborted) return;
    this.timer = setTimeout(() => this.tick(), delayMs);
    this.timer.unref();
  }

  private tick(): void {
    const options = this.options!;
    const now = this.now();
    let next = MAX_TICK_MS;
    for (const model of options.registry().models) {
      if (!options.applies(model)) continue;
      const intervalMs = probeIntervalMs(options.params(model));
      if (intervalMs === undefined || probedRoutes(model).length === 0) continue;
      const due = this.due.get(model.id) ?? now;
      if (due <= now && !this.inFlight.has(model.id)) {
        this.due.set(model.id, now + intervalMs);
        const round = this.round(model, options).finally(() => this.inFlight.delete(model.id));
        this.inFlight.set(model.id, round);
        next = Math.min(next, intervalMs);
      } else {
        next = Math.min(next, Math.max(due - now, MIN_TICK_MS));
      }
    }
    this.schedule(Math.max(MIN_TICK_MS, next));
  }

  /** One round of a model: under its lease (when there is a database), every probed route in parallel. */
  private async round(model: Model, options: ProberStartOptions): Promise<void> {
    const signal = this.stopping!.signal;
    const lease = { modelId: model.id, holder: this.holder, ttlMs: 2 * this.timeoutMs + 10_000 };
    try {
      if (options.db && !(await acquireProbeLease(options.db, lease))) return;
    } catch (err) {
      options.log.warn({ err, event: 'routewise_probe_lease_failed', model_id: model.id }, `routewise probe lease of ${model.id} could not be taken; skipping this round`);
      return;
    }
    const startedAt = this.now();
    try {
      await Promise.all(probedRoutes(model).map(async (route) => {
        const result = await this.probe(route, signal);
        if (!signal.aborted) this.results.set(route.endpointId, result);
      }));
    } finally {
      this.rounds.push({ modelId: model.id, startedAt, endedAt: this.now() });
      if (this.rounds.length > ROUND_HISTORY) this.rounds.shift();
      if (options.db) {
        await releaseProbeLease(options.db, lease).catch((err: unknown) => {
          options.log.warn({ err, event: 'routewise_probe_lease_release_failed', model_id: model.id }, `routewise probe lease of ${model.id} could not be released; it expires on its own`);
        });
      }
    }
  }

  private async probe(route: Route, stopping: AbortSignal): Promise<ProbeResult> {
    const started = this.now();
    try {
      const signal = AbortSignal.any([AbortSignal.timeout(this.timeoutMs), stopping]);
      const headers = upstreamHeaders(route.apiKeys[0], resolveAdapterKind(route.kind));
      const response = await fetch(probeUrl(route), { headers, signal, redirect: 'manual' });
      const latencyMs = this.now() - started;
      await response.body?.cancel();
      return { ok: response.status < 500, latencyMs, at: this.now() };
    } catch {
      return { ok: false, latencyMs: this.now() - started, at: this.now() };
    }
  }
}
