/**
 * Session affinity pins (docs/routing.md "Session affinity"): caller × model → endpoint, so one
 * caller keeps hitting the endpoint that holds its prompt cache. A pin's TTL slides with every use;
 * a pin older than the maximum age is dropped even while in use (so load rebalances eventually);
 * idle pins are swept lazily once the table holds more than `sweepAbove` entries. Pure apart from
 * the injected clock.
 */

export interface AffinityOptions {
  /** False: no pins are read or written (`ROUTING_AFFINITY_ENABLED=0`). */
  enabled: boolean;
  ttlMs: number;
  /** 0 disables the age cap. */
  maxAgeMs: number;
  /** Table size above which expired pins are swept on the next write. */
  sweepAbove: number;
  now: () => number;
}

interface Pin {
  endpointId: string;
  createdAt: number;
  lastUsedAt: number;
}

export class AffinityTable {
  private readonly pins = new Map<string, Pin>();

  constructor(private readonly options: AffinityOptions) {}

  get enabled(): boolean {
    return this.options.enabled;
  }

  /** Entries held (expired ones included until swept). */
  get size(): number {
    return this.pins.size;
  }

  /** The table key of a caller's pin for a model (`affinityKey`: API-key hash, grant or address bucket, + model id). */
  static key(callerKey: string, modelId: string): string {
    return `${callerKey}\n${modelId}`;
  }

  /** The pinned endpoint, or undefined when there is none or it expired (idle or too old). */
  lookup(key: string): string | undefined {
    if (!this.options.enabled) return undefined;
    const pin = this.pins.get(key);
    if (!pin) return undefined;
    if (this.expired(pin, this.options.now())) {
      this.pins.delete(key);
      return undefined;
    }
    return pin.endpointId;
  }

  /** Pins (or keeps pinned, refreshing the TTL) a caller to the endpoint that answered. */
  pin(key: string, endpointId: string): void {
    if (!this.options.enabled) return;
    const now = this.options.now();
    const pin = this.pins.get(key);
    if (pin && pin.endpointId === endpointId && !this.expired(pin, now)) {
      pin.lastUsedAt = now;
      return;
    }
    this.pins.set(key, { endpointId, createdAt: now, lastUsedAt: now });
    if (this.pins.size > this.options.sweepAbove) this.sweep(now);
  }

  /** Drops a pin (adapter error, weight 0, open circuit). */
  drop(key: string): void {
    this.pins.delete(key);
  }

  private expired(pin: Pin, now: number): boolean {
    if (now - pin.lastUsedAt > this.options.ttlMs) return true;
    return this.options.maxAgeMs > 0 && now - pin.createdAt > this.options.maxAgeMs;
  }

  private sweep(now: number): void {
    for (const [key, pin] of this.pins) if (this.expired(pin, now)) this.pins.delete(key);
  }
}
