/**
 * CPU accounting from /proc: busy % per core over a window, and how much CPU went to processes
 * other than the benchmark's own (runner, upstream, gateway). On a shared machine that second
 * figure tells whether a row was measured on a quiet machine; a row whose gateway core is near
 * 100 % while the load core is not is bounded by the gateway.
 */
import { readFileSync } from 'node:fs';

/** Pids whose CPU time counts as the benchmark's own (the runner adds its children). */
export const ownPids = new Set<number>([process.pid, process.ppid]);

interface Snapshot {
  /** Per core: [busy jiffies, total jiffies, user+nice+system jiffies]. */
  cores: Array<[number, number, number]>;
  /** Our processes' utime+stime, in the same clock ticks. */
  own: number;
}

export interface CpuUse {
  /** Busy % of each core. */
  busy: number[];
  /** CPU used by other processes, in % of one core. */
  others: number;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function processTicks(pid: number): number {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return 0;
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
}

/** Current per-core and per-process counters. */
export function cpuSnapshot(): Snapshot {
  const cores: Snapshot['cores'] = [];
  for (const line of (read('/proc/stat') ?? '').split('\n')) {
    const match = /^cpu(\d+)\s+(.+)$/.exec(line);
    if (!match?.[1] || !match[2]) continue;
    const f = match[2].trim().split(/\s+/).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user … steal (guest is inside user)
    const idle = (f[3] ?? 0) + (f[4] ?? 0); // idle + iowait
    cores[Number(match[1])] = [total - idle, total, (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0)];
  }
  let own = 0;
  for (const pid of ownPids) own += processTicks(pid);
  return { cores, own };
}

/** CPU use between two snapshots (NaN where /proc is unreadable). */
export function cpuUse(before: Snapshot, after: Snapshot): CpuUse {
  let spent = 0;
  let window = 0;
  const busy = after.cores.map(([b, t, s], i) => {
    const [b0, t0, s0] = before.cores[i] ?? [b, t, s];
    spent += s - s0;
    window += t - t0;
    return t > t0 ? (100 * (b - b0)) / (t - t0) : Number.NaN;
  });
  const perCore = after.cores.length > 0 ? window / after.cores.length : 0;
  // Rounding of per-process ticks can make this slightly negative on an idle machine.
  const others = perCore > 0 ? Math.max(0, (100 * (spent - (after.own - before.own))) / perCore) : Number.NaN;
  return { busy, others };
}

/**
 * Waits (at most `maxWaitMs`) until other processes use less than `thresholdPct` of one core over
 * a one-second sample; returns the last sample's figure.
 */
export async function waitForQuiet(thresholdPct: number, maxWaitMs: number): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const before = cpuSnapshot();
    await new Promise((r) => setTimeout(r, 1000));
    const { others } = cpuUse(before, cpuSnapshot());
    if (!(others >= thresholdPct) || Date.now() >= deadline) return others;
  }
}
