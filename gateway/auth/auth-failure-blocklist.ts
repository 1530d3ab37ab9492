/**
 * Repeated-auth-failure blocklist (docs/identity.md). A source that fails authentication
 * `AUTH_FAILURE_BLOCK_THRESHOLD` times within `AUTH_FAILURE_BLOCK_WINDOW_SEC` is refused for
 * `AUTH_FAILURE_BLOCK_DURATION_SEC` with 429, whatever credential it presents next (callers ask
 * {@link AuthFailureBlocklist.blocked} before reading the key). Per process, in memory: a restart
 * clears it.
 *
 * The source is the client bucket (an IPv4 address, or the /64 of an IPv6 address); a request
 * whose address could not be resolved is counted under its socket peer (`unresolved:<peer>`), so
 * making the address unresolvable does not escape the count. Failures are kept as a ring of the
 * last `threshold` timestamps per source (memory per source is bounded by the threshold), and
 * at most `maxSources` sources are tracked (the stalest are forgotten first).
 */
import { CidrSet, newIpWords, parseIpInto } from '../../lib/client-address/cidr';
import { ipBucket, splitNetworkList, type ClientIpInfo } from '../../lib/client-address/client-address';

export const BLOCKED_MESSAGE = 'Too many authentication failures from this IP. Temporarily blocked.';

export interface BlocklistOptions {
  threshold: number;
  windowSec: number;
  durationSec: number;
  /** Comma-separated addresses or CIDRs never blocked. */
  exempt?: string | undefined;
  maxSources?: number;
  now?: () => number;
}

interface SourceState {
  /** Ring of failure times (ms), `count` valid entries ending at `next - 1`. */
  times: Float64Array;
  next: number;
  count: number;
  blockedUntil: number;
  blockedAt: number;
  lastFailure: number;
}

export interface BlockEntry {
  source: string;
  blocked_at: string;
  blocked_until: string;
  failures_in_window: number;
}

/** The blocklist key of a request's client. */
export function blocklistSource(client: ClientIpInfo): string {
  return client.resolved ? ipBucket(client.client_ip) : `unresolved:${client.peer_ip}`;
}

export class AuthFailureBlocklist {
  private readonly sources = new Map<string, SourceState>();
  private readonly exempt: CidrSet;
  private readonly now: () => number;
  private readonly maxSources: number;

  constructor(private readonly options: BlocklistOptions) {
    try {
      this.exempt = CidrSet.parse(splitNetworkList(options.exempt));
    } catch (err) {
      throw new Error(`AUTH_FAILURE_BLOCK_EXEMPT_IPS: ${(err as Error).message}`, { cause: err });
    }
    this.now = options.now ?? Date.now;
    this.maxSources = options.maxSources ?? 100_000;
  }

  private isExempt(client: ClientIpInfo): boolean {
    if (this.exempt.size === 0) return false;
    const ip = client.resolved ? client.client_ip : client.peer_ip;
    const w = newIpWords();
    return parseIpInto(ip, 0, ip.length, w) !== 0 && this.exempt.has(w);
  }

  /** Whether the client is refused right now (exempt clients never are). Cheap: one map lookup. */
  blocked(client: ClientIpInfo): boolean {
    if (this.sources.size === 0) return false;
    const state = this.sources.get(blocklistSource(client));
    return state !== undefined && state.blockedUntil > this.now() && !this.isExempt(client);
  }

  /** Counts one failed authentication; true when this failure started a block. */
  recordFailure(client: ClientIpInfo): boolean {
    if (this.isExempt(client)) return false;
    const source = blocklistSource(client);
    const now = this.now();
    let state = this.sources.get(source);
    if (!state) {
      if (this.sources.size >= this.maxSources) this.evict(now);
      state = { times: new Float64Array(this.options.threshold), next: 0, count: 0, blockedUntil: 0, blockedAt: 0, lastFailure: now };
      this.sources.set(source, state);
    }
    state.lastFailure = now;
    state.times[state.next] = now;
    state.next = (state.next + 1) % state.times.length;
    state.count = Math.min(state.count + 1, state.times.length);
    if (state.blockedUntil > now || state.count < this.options.threshold) return false;
    // The ring is full: its oldest entry is the threshold-th most recent failure.
    const oldest = state.times[state.next]!;
    if (now - oldest > this.options.windowSec * 1000) return false;
    state.blockedAt = now;
    state.blockedUntil = now + this.options.durationSec * 1000;
    return true;
  }

  /** Current blocks, newest first. */
  list(): BlockEntry[] {
    const now = this.now();
    const out: Array<BlockEntry & { at: number }> = [];
    for (const [source, state] of this.sources) {
      if (state.blockedUntil <= now) continue;
      out.push({
        source, at: state.blockedAt,
        blocked_at: new Date(state.blockedAt).toISOString(),
        blocked_until: new Date(state.blockedUntil).toISOString(),
        failures_in_window: this.failuresInWindow(state, now),
      });
    }
    return out.sort((a, b) => b.at - a.at).map(({ at: _at, ...entry }) => entry);
  }

  /** Lifts the block (and forgets the failures) of a raw address or bucket key; false when nothing was blocked. */
  clear(ipOrBucket: string): boolean {
    const keys = [ipOrBucket, ipBucket(ipOrBucket)];
    for (const key of keys) {
      const state = this.sources.get(key);
      if (state && state.blockedUntil > this.now()) {
        this.sources.delete(key);
        return true;
      }
    }
    return false;
  }

  private failuresInWindow(state: SourceState, now: number): number {
    let n = 0;
    for (let k = 0; k < state.count; k += 1) if (now - state.times[k]! <= this.options.windowSec * 1000) n += 1;
    return n;
  }

  /** Forgets expired sources, then (still full) the tenth with the oldest last failure. */
  private evict(now: number): void {
    for (const [source, state] of this.sources) {
      if (state.blockedUntil <= now && now - state.lastFailure > this.options.windowSec * 1000) this.sources.delete(source);
    }
    if (this.sources.size < this.maxSources) return;
    const byAge = [...this.sources].filter(([, s]) => s.blockedUntil <= now).sort((a, b) => a[1].lastFailure - b[1].lastFailure);
    for (const [source] of byAge.slice(0, Math.max(1, Math.floor(this.maxSources / 10)))) this.sources.delete(source);
  }
}
