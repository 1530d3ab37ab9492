/**
 * Prefill backlog per endpoint: the estimated un-cached prompt tokens of requests sent to it
 * that have not yet produced a first byte, and how many of them are elephants. A caller's last
 * prompt size per endpoint is remembered for a while: a follow-up prompt that extends it is
 * assumed to hit the prefix cache for the remembered part. Pure apart from the injected clock.
 */

export interface PrefillOptions {
  /** False: nothing is tracked and selection is plain weighted. */
  enabled: boolean;
  /** Power-of-two choice engages only when the heavier draw has at least this backlog. */
  interveneTokens: number;
  /** Estimated prompt tokens from which a request is an elephant. */
  elephantTokens: number;
  /** Elephants in prefill at one endpoint before further elephants avoid it (0: no limit). */
  maxElephantsPerEndpoint: number;
  /** How long a caller's prompt size is remembered (prefix-cache estimate). */
  memoryMs: number;
  now: () => number;
}

class Load {
  tokens = 0;
  elephants = 0;
}

interface Remembered {
  endpointId: string;
  tokens: number;
  at: number;
}

const MEMORY_SWEEP_ABOVE = 1000;

export class PrefillTracker {
  private readonly loads = new Map<string, Load>();
  private readonly memory = new Map<string, Remembered>();

  constructor(readonly options: PrefillOptions) {}

  get enabled(): boolean {
    return this.options.enabled;
  }

  /** Un-cached prompt tokens in flight to an endpoint. */
  backlog(endpointId: string): number {
    return this.loads.get(endpointId)?.tokens ?? 0;
  }

  /** Elephants in prefill at an endpoint. */
  elephants(endpointId: string): number {
    return this.loads.get(endpointId)?.elephants ?? 0;
  }

  isElephant(promptTokens: number): boolean {
    return promptTokens >= this.options.elephantTokens;
  }

  /** Whether an elephant may go to the endpoint now. */
  elephantRoom(endpointId: string): boolean {
    const max = this.options.maxElephantsPerEndpoint;
    return max === 0 || this.elephants(endpointId) < max;
  }

  /**
   * The un-cached part of a prompt of `promptTokens` sent to `endpointId` by the caller `memoryKey`:
   * the growth over its remembered previous prompt at the same endpoint, else all of it.
   */
  uncached(memoryKey: string | undefined, endpointId: string, promptTokens: number): number {
    if (memoryKey === undefined) return promptTokens;
    const seen = this.memory.get(memoryKey);
    if (!seen || seen.endpointId !== endpointId || seen.tokens > promptTokens) return promptTokens;
    if (this.options.now() - seen.at > this.options.memoryMs) return promptTokens;
    return promptTokens - seen.tokens;
  }

  /** Remembers a caller's prompt size at the endpoint that took it. */
  remember(memoryKey: string, endpointId: string, promptTokens: number): void {
    const now = this.options.now();
    const seen = this.memory.get(memoryKey);
    if (seen) {
      seen.endpointId = endpointId;
      seen.tokens = promptTokens;
      seen.at = now;
      return;
    }
    this.memory.set(memoryKey, { endpointId, tokens: promptTokens, at: now });
    if (this.memory.size > MEMORY_SWEEP_ABOVE) {
      for (const [key, r] of this.memory) if (now - r.at > this.options.memoryMs) this.memory.delete(key);
    }
  }

  /** A request enters prefill at an endpoint. */
  start(endpointId: string, tokens: number, elephant: boolean): void {
    let load = this.loads.get(endpointId);
    if (!load) {
      load = new Load();
      this.loads.set(endpointId, load);
    }
    load.tokens += tokens;
    if (elephant) load.elephants += 1;
  }

  /** The request's prefill ended (first byte, answer or failure). */
  finish(endpointId: string, tokens: number, elephant: boolean): void {
    const load = this.loads.get(endpointId);
    if (!load) return;
    load.tokens = Math.max(0, load.tokens - tokens);
    if (elephant) load.elephants = Math.max(0, load.elephants - 1);
  }
}

/** The minimum a route list needs for {@link preferLighter}. */
interface HasEndpoint {
  readonly endpointId: string;
}

/**
 * Power-of-two choices over a weighted order (in place): the first two entries are two weighted
 * draws; when the heavier of them has at least `interveneTokens` queued and the second is
 * lighter, the second goes first. An elephant then avoids endpoints at their elephant limit
 * (the first entry with room moves to the front; none with room leaves the order as it is).
 */
export function preferLighter<R extends HasEndpoint>(order: R[], tracker: PrefillTracker, elephant: boolean): R[] {
  if (!tracker.enabled || order.length < 2) return order;
  const a = tracker.backlog(order[0]!.endpointId);
  const b = tracker.backlog(order[1]!.endpointId);
  if (Math.max(a, b) >= tracker.options.interveneTokens && b < a) {
    const first = order[0]!;
    order[0] = order[1]!;
    order[1] = first;
  }
  if (elephant && !tracker.elephantRoom(order[0]!.endpointId)) {
    const index = order.findIndex((r) => tracker.elephantRoom(r.endpointId));
    if (index > 0) order.unshift(...order.splice(index, 1));
  }
  return order;
}
