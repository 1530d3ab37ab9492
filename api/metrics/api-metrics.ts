/**
 * The control-plane API's Prometheus metrics (docs/metrics.md), in its own prom-client
 * Registry (never the global one). Request counts and latency are recorded per matched route
 * pattern (never the raw URL: ids stay out of label values), method and status class. The
 * database-derived gauges are refreshed every {@link REFRESH_MS} by one periodic read and served
 * from memory, so a scrape during a PostgreSQL outage still answers, with the last values and
 * `agent_metrics_refresh_last_success_timestamp_seconds` saying how old they are.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Middleware } from 'koa';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { Periodic } from '../../lib/periodic';
import { readControlPlaneSnapshot, type ControlPlaneSnapshot } from '../../agent/metrics/control-plane-snapshot';

/** How often the database-derived gauges are refreshed. */
export const REFRESH_MS = 15_000;

/** The label of a request no route matched (404s, 405s): one series, whatever the path. */
const UNMATCHED = 'unmatched';

export class ApiMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({ name: 'agent_http_requests_total', help: 'API requests by matched route pattern, method and status class', labelNames: ['route', 'method', 'status_class'], registers: [this.registry] });
  private readonly latency = new Histogram({
    name: 'agent_http_request_duration_seconds', help: 'API request latency (until the response is handed to Node) by matched route pattern and method',
    labelNames: ['route', 'method'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: [this.registry],
  });
  private readonly turns = new Gauge({ name: 'agent_turns', help: 'Turns by state', labelNames: ['state'], registers: [this.registry] });
  private readonly sandboxes = new Gauge({ name: 'agent_sandbox_groups', help: 'Sandbox groups by state', labelNames: ['state'], registers: [this.registry] });
  private readonly slotCapacity = new Gauge({ name: 'agent_host_slots_capacity', help: 'Slots admission uses per enrolled host', labelNames: ['host'], registers: [this.registry] });
  private readonly slotsUsed = new Gauge({ name: 'agent_host_slots_used', help: 'Running attempts (one slot each) per enrolled host', labelNames: ['host'], registers: [this.registry] });
  private readonly hosts = new Gauge({ name: 'agent_hosts_enrolled', help: 'Enrolled hosts', registers: [this.registry] });
  private readonly jobsQueued = new Gauge({ name: 'agent_jobs_queued', help: 'Jobs with a queued turn', registers: [this.registry] });
  private readonly lastSuccess = new Gauge({ name: 'agent_metrics_refresh_last_success_timestamp_seconds', help: 'When the database-derived gauges were last refreshed (Unix seconds; 0: never)', registers: [this.registry] });
  private readonly refreshFailures = new Counter({ name: 'agent_metrics_refresh_failures_total', help: 'Failed refreshes of the database-derived gauges', registers: [this.registry] });
  private periodic: Periodic | undefined;

  constructor() {
    this.lastSuccess.set(0);
  }

  /** Koa middleware recording each request once its response is decided (mounted outside the error middleware). */
  requestMiddleware(): Middleware {
    return async (ctx, next) => {
      const started = process.hrtime.bigint();
      try {
        await next();
      } finally {
        const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
        const labels = { route: typeof route === 'string' ? route : UNMATCHED, method: ctx.method };
        this.requests.inc({ ...labels, status_class: `${Math.floor(ctx.status / 100)}xx` });
        this.latency.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
      }
    };
  }

  /** Sets the gauges from a snapshot and stamps the success time. */
  apply(snapshot: ControlPlaneSnapshot, nowMs: number = Date.now()): void {
    for (const [state, count] of snapshot.turnsByState) this.turns.set({ state }, count);
    for (const [state, count] of snapshot.sandboxesByState) this.sandboxes.set({ state }, count);
    // A removed host's series go away with it.
    this.slotCapacity.reset();
    this.slotsUsed.reset();
    for (const host of snapshot.hosts) {
      this.slotCapacity.set({ host: host.hostId }, host.capacity);
      this.slotsUsed.set({ host: host.hostId }, host.used);
    }
    this.hosts.set(snapshot.hosts.length);
    this.jobsQueued.set(snapshot.jobsQueued);
    this.lastSuccess.set(nowMs / 1000);
  }

  /**
   * Starts the periodic refresh. A failed refresh (the first one included: the API starts without
   * PostgreSQL's answer) is counted and logged, the last values stay, the next tick retries.
   */
  async start(db: Db, options: { defaultSlots: number; log: Logger; everyMs?: number }): Promise<void> {
    if (this.periodic) return;
    const refresh = async () => {
      try {
        this.apply(await readControlPlaneSnapshot(db, options.defaultSlots));
      } catch (err) {
        this.refreshFailures.inc();
        options.log.warn({ err }, 'metrics refresh failed; keeping the last values and retrying');
      }
    };
    this.periodic = new Periodic(refresh, options.everyMs ?? REFRESH_MS, options.log, 'metrics refresh');
    await this.periodic.start();
  }

  stop(): void {
    this.periodic?.stop();
    this.periodic = undefined;
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
