/**
 * Where the CPU went during a bench phase, from /proc: the whole machine (busy time of all cores),
 * this process (API, control worker, host runner, gateway, bench client: one Node process), the
 * Temporal dev server it started, the PostgreSQL backends of its database, and the Docker daemons
 * (dockerd, containerd, shims; shared with other sessions). The rest is other sessions' work and
 * short-lived processes (e.g. `runc` and the agent inside containers) that ended in the window.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc times (USER_HZ; 100 on Linux). */
const HZ = 100;

export const CPU_GROUPS = ['machine', 'bench process', 'temporal', 'postgres', 'docker'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];
export type CpuSeconds = Record<CpuGroup, number>;

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Busy seconds summed over all cores since boot. */
function machineBusySeconds(): number {
  const line = (read('/proc/stat') ?? '').split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return Number.NaN;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - (f[3] ?? 0) - (f[4] ?? 0)) / HZ;
}

function groupOf(pid: number, comm: string, ppid: number, dbName: string): CpuGroup | undefined {
  if (pid === process.pid) return 'bench process';
  if (ppid === process.pid && comm === 'temporal') return 'temporal';
  if (comm === 'dockerd' || comm === 'containerd' || comm.startsWith('containerd-shim')) return 'docker';
  if (comm === 'postgres' && (read(`/proc/${pid}/cmdline`) ?? '').includes(` ${dbName} `)) return 'postgres';
  return undefined;
}

/** CPU seconds used so far by each group (the processes alive now). */
export function cpuSnapshot(dbName: string): CpuSeconds {
  const totals: CpuSeconds = { machine: machineBusySeconds(), 'bench process': 0, temporal: 0, postgres: 0, docker: 0 };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = read(`/proc/${entry}/stat`);
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const group = groupOf(Number(entry), comm, Number(fields[1]), dbName);
    if (group) totals[group] += (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / HZ;
  }
  return totals;
}

/** CPU seconds per group between two snapshots (a group's processes that ended are not counted). */
export function cpuSpent(before: CpuSeconds, after: CpuSeconds): CpuSeconds {
  return Object.fromEntries(CPU_GROUPS.map((g) => [g, Math.max(0, after[g] - before[g])])) as CpuSeconds;
}
