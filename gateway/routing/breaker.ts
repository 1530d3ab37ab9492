/**
 * Circuit breaker per endpoint, per process (docs/routing.md "Circuit breaker"). Closed → open after
 * `failureThreshold` consecutive failures, or a failure leaving the availability average (an
 * EWMA of successes, 1 = all succeed) below `minAvailability`; open → half-open once the cooldown
 * has elapsed, admitting exactly one test request; its success closes the circuit, its failure
 * re-opens it. What counts as a failure is decided by {@link countsAgainstBreaker}. Pure apart
 * from the injected clock; state changes go to a listener (alerting engine, logs).
 */
import type { UpstreamError } from '../upstream/upstream-error';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  failureThreshold: number;
  cooldownMs: number;
  minAvailability: number;
  /** EWMA weight of the newest outcome (0 < alpha ≤ 1). */
  availabilityAlpha: number;
  now: () => number;
}

/** A state change, for the alerting engine (`circuit_open`, `circuit_closed`) and logs. */
export interface CircuitEvent {
  type: 'circuit_open' | 'circuit_half_open' | 'circuit_closed';
  endpointId: string;
  availability: number;
  consecutiveFailures: number;
  /** Why it opened: `consecutive_failures` or `availability`; `probe_failed` from half-open. */
  reason?: 'consecutive_failures' | 'availability' | 'probe_failed';
}

export type CircuitListener = (event: CircuitEvent) => void;

/** What {@link CircuitBreakers.admit} grants: a normal request, the half-open test request, or nothing. */
export type Admission = 'closed' | 'probe' | false;

class Circuit {
  state: CircuitState = 'closed';
  availability = 1;
  consecutiveFailures = 0;
  openedAt = 0;
  probeInFlight = false;
  /** An upstream rejected the gateway's own credential (401): `degraded` in `/health/deep`. */
  credentialRejected = false;
}

/** What `/health/deep` shows of one endpoint. */
export interface CircuitSnapshot {
  state: CircuitState;
  availability: number;
  consecutive_failures: number;
  probe_in_flight: boolean;
  degraded: boolean;
}

export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();
  private readonly listeners: CircuitListener[] = [];

  constructor(private readonly options: BreakerOptions) {}

  /** Registers a state-change listener (the alerting engine, logging). */
  onChange(listener: CircuitListener): void {
    this.listeners.push(listener);
  }

  private circuit(endpointId: string): Circuit {
    let c = this.circuits.get(endpointId);
    if (!c) {
      c = new Circuit();
      this.circuits.set(endpointId, c);
    }
    return c;
  }

  /** Whether a request could be sent now, without taking the half-open slot (ordering, affinity). */
  admissible(endpointId: string): boolean {
    const c = this.circuits.get(endpointId);
    if (!c || c.state === 'closed') return true;
    if (c.state === 'open') return this.options.now() - c.openedAt >= this.options.cooldownMs;
    return !c.probeInFlight;
  }

  /** Whether the circuit is open (cooldown not elapsed) — a pinned caller then re-picks. */
  isOpen(endpointId: string): boolean {
    const c = this.circuits.get(endpointId);
    return c !== undefined && c.state !== 'closed' && !this.admissible(endpointId);
  }

  /**
   * Admits a request: `closed` for a normal one, `probe` for the single half-open test request
   * (its outcome must be reported with {@link record} or {@link abandon}), false when refused.
   * `mayProbe: false` (synthetic probes, which record nothing) never takes the test slot.
   */
  admit(endpointId: string, mayProbe = true): Admission {
    const c = this.circuits.get(endpointId);
    if (!c || c.state === 'closed') return 'closed';
    if (c.state === 'open') {
      if (this.options.now() - c.openedAt < this.options.cooldownMs) return false;
      c.state = 'half_open';
      this.emit(c, endpointId, 'circuit_half_open');
    }
    if (c.probeInFlight || !mayProbe) return false;
    c.probeInFlight = true;
    return 'probe';
  }

  /**
   * Records the outcome of an admitted request; `probe` is true for the half-open test request.
   * Outcomes of requests admitted before the circuit opened only move the average.
   */
  record(endpointId: string, ok: boolean, probe = false): void {
    const c = this.circuit(endpointId);
    const alpha = this.options.availabilityAlpha;
    c.availability = c.availability * (1 - alpha) + (ok ? alpha : 0);
    if (probe && c.state === 'half_open' && c.probeInFlight) {
      c.probeInFlight = false;
      if (ok) {
        c.consecutiveFailures = 0;
        c.state = 'closed';
        // The endpoint proved itself: its average restarts just above the floor it fell through.
        c.availability = Math.max(c.availability, 1 - alpha);
        this.emit(c, endpointId, 'circuit_closed');
      } else {
        c.consecutiveFailures += 1;
        this.open(c, endpointId, 'probe_failed');
      }
      return;
    }
    if (c.state !== 'closed') return;
    if (ok) {
      c.consecutiveFailures = 0;
      return;
    }
    c.consecutiveFailures += 1;
    if (c.consecutiveFailures >= this.options.failureThreshold) this.open(c, endpointId, 'consecutive_failures');
    else if (c.availability < this.options.minAvailability) this.open(c, endpointId, 'availability');
  }

  /** The half-open test request ended without a verdict (client left): the slot is free again. */
  abandon(endpointId: string): void {
    const c = this.circuits.get(endpointId);
    if (c) c.probeInFlight = false;
  }

  /** An upstream 401: the gateway's credential was rejected; `degraded` from the first one. */
  markCredentialRejected(endpointId: string): void {
    this.circuit(endpointId).credentialRejected = true;
  }

  /** A successful answer shows the credential works again. */
  clearCredentialRejected(endpointId: string): void {
    const c = this.circuits.get(endpointId);
    if (c) c.credentialRejected = false;
  }

  snapshot(endpointId: string): CircuitSnapshot {
    const c = this.circuits.get(endpointId) ?? new Circuit();
    const state = c.state === 'open' && this.options.now() - c.openedAt >= this.options.cooldownMs ? 'half_open' : c.state;
    return { state, availability: c.availability, consecutive_failures: c.consecutiveFailures, probe_in_flight: c.probeInFlight, degraded: c.credentialRejected };
  }

  private open(c: Circuit, endpointId: string, reason: NonNullable<CircuitEvent['reason']>): void {
    c.state = 'open';
    c.openedAt = this.options.now();
    this.emit(c, endpointId, 'circuit_open', reason);
  }

  private emit(c: Circuit, endpointId: string, type: CircuitEvent['type'], reason?: CircuitEvent['reason']): void {
    if (this.listeners.length === 0) return;
    const event: CircuitEvent = { type, endpointId, availability: c.availability, consecutiveFailures: c.consecutiveFailures, ...(reason ? { reason } : {}) };
    for (const listener of this.listeners) listener(event);
  }
}

/**
 * Whether an upstream failure counts against the endpoint's breaker: connect errors, timeouts,
 * 5xx and stream failures before the first byte do. A 429 does not: it limits one (provider,
 * key) pair, not the endpoint's health, and the adaptive concurrency limiter already answers it
 * (smaller limit, `Retry-After` honoured); opening the circuit would also shut the pool's other
 * keys. Client 4xx, context-length refusals, upstream 401 (a configuration problem, shown as
 * `degraded`) and waits for a concurrency permit do not count either.
 */
export function countsAgainstBreaker(err: UpstreamError): boolean {
  if (err.failure === 'concurrency') return false;
  if (err.options.contextLength) return false;
  const status = err.options.upstreamStatus;
  if (status === undefined) return true;
  return status >= 500;
}
