/**
 * Health probing of the routing file's local entries (docs/routing-file.md): every `health_check`
 * seconds a GET to the entry endpoint's origin + `/health`, given `timeout` seconds to answer. A
 * 2xx answer is `healthy`, anything else (status, refusal, timeout) `unhealthy`. A change of state
 * is logged at WARNING. The results are only reported (`GET /routing` →
 * `manager_status.endpoint_health`); they never change routing. The timer is unref'd and {@link
 * EndpointHealthProbe.stop} ends it.
 */
import type { Logger } from '../../lib/logger';
import type { RoutingFileConfig } from './schema';

export type EndpointHealthState = 'unknown' | 'healthy' | 'unhealthy';

/** What `/routing` shows for one probed endpoint. */
export interface EndpointHealth {
  /** The probed URL (endpoint origin + `/health`). */
  url: string;
  status: EndpointHealthState;
  /** ISO time of the last completed probe. */
  checked_at: string | null;
  /** HTTP status of the last answer, when there was one. */
  http_status: number | null;
  /** Why the last probe failed. */
  error: string | null;
}

/** The probe URL of an endpoint: its origin plus `/health` (the endpoint's own path is ignored). */
export function healthUrl(endpoint: string): string {
  return `${new URL(endpoint).origin}/health`;
}

export class EndpointHealthProbe {
  private readonly health = new Map<string, EndpointHealth>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Aborts probes in flight at {@link stop}, so shutdown does not wait for `timeout`. */
  private readonly stopping = new AbortController();

  constructor(private readonly options: {
    config: Pick<RoutingFileConfig, 'local_deployment' | 'timeout' | 'health_check'>;
    log: Logger;
    now?: () => Date;
  }) {
    for (const entry of options.config.local_deployment) {
      this.health.set(entry.endpoint, { url: healthUrl(entry.endpoint), status: 'unknown', checked_at: null, http_status: null, error: null });
    }
  }

  /** Whether probing runs (`health_check` > 0 and at least one local entry). */
  get enabled(): boolean {
    return this.options.config.health_check > 0 && this.health.size > 0;
  }

  /** Endpoint → last result (a copy). Empty when probing is disabled. */
  snapshot(): Record<string, EndpointHealth> {
    if (!this.enabled) return {};
    return Object.fromEntries([...this.health].map(([endpoint, h]) => [endpoint, { ...h }]));
  }

  /** Probes once now, then every `health_check` seconds. No-op when disabled. */
  start(): void {
    if (!this.enabled || this.timer || this.stopping.signal.aborted) return;
    this.timer = setInterval(() => void this.probeAll(), this.options.config.health_check * 1000);
    this.timer.unref();
    void this.probeAll();
  }

  /** Stops the timer and aborts probes in flight (their results are discarded). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.running;
  }

  /** Probes every local endpoint once (a round still running is not overlapped). */
  probeAll(): Promise<void> {
    this.running ??= Promise.all([...this.health.keys()].map((e) => this.probe(e))).then(() => undefined).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async probe(endpoint: string): Promise<void> {
    const previous = this.health.get(endpoint)!;
    let status: EndpointHealthState;
    let httpStatus: number | null = null;
    let error: string | null = null;
    try {
      const signal = AbortSignal.any([AbortSignal.timeout(this.options.config.timeout * 1000), this.stopping.signal]);
      const response = await fetch(previous.url, { signal, redirect: 'manual' });
      await response.body?.cancel();
      httpStatus = response.status;
      status = response.ok ? 'healthy' : 'unhealthy';
      if (!response.ok) error = `HTTP ${response.status}`;
    } catch (err) {
      status = 'unhealthy';
      error = err instanceof Error ? (err.name === 'TimeoutError' ? `no answer within ${this.options.config.timeout}s` : err.message) : String(err);
    }
    if (this.stopping.signal.aborted) return;
    const now = (this.options.now ?? (() => new Date()))();
    this.health.set(endpoint, { url: previous.url, status, checked_at: now.toISOString(), http_status: httpStatus, error });
    if (status !== previous.status) {
      this.options.log.warn(
        { event: 'routing_endpoint_health_changed', endpoint, url: previous.url, from: previous.status, to: status, error },
        `Routing-file endpoint ${endpoint} is now ${status} (was ${previous.status})${error ? `: ${error}` : ''}; routing is unchanged (endpoint_health_enforced: false)`,
      );
    }
  }
}
