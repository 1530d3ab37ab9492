/**
 * The host's side of the inventory reconciler (docs/sandboxes.md "Reconciler"): list
 * the containers labelled `agent.managed=true` and `agent.host=<this host>` with a resource reading,
 * and remove the orphans the API names, by id, only while they still carry this host's labels.
 * Only containers of this host are ever listed or removed: the label filter is Docker's own.
 */
import type Docker from 'dockerode';
import { cleanText } from '../../lib/text';
import { CONTAINER_STATES, type ContainerState } from '../../lib/contracts/host-api';
import { MANAGED_LABEL } from './sandbox-command';
import { SANDBOX_LABELS } from './sandbox-container';
import { sandboxDiskOfMounts, sandboxDiskUsage } from './sandbox-disk';
import { removeContainerAndDisk } from './sandbox-removal';

export interface InventoryContainer {
  container_id: string;
  name: string;
  group_id: string | null;
  generation: string | null;
  state: ContainerState;
  cpu_percent: number | null;
  memory_bytes: number | null;
  disk_bytes: number | null;
}

/** Stats requests in flight at once (Docker samples each for about a second). */
const STATS_CONCURRENCY = 8;

/** The Docker label filter of one host's managed containers. */
export function hostLabelFilter(hostId: string): { label: string[] } {
  return { label: [`${MANAGED_LABEL}=true`, `${SANDBOX_LABELS.host}=${hostId}`] };
}

/** A label value as reported: cleaned (the API refuses NUL and lone surrogates) and bounded. */
function labelValue(value: string | undefined, max: number): string | null {
  return value === undefined ? null : cleanText(value).slice(0, max);
}

function stateOf(state: string): ContainerState {
  return (CONTAINER_STATES as readonly string[]).includes(state) ? (state as ContainerState) : 'dead';
}

interface StatsReading {
  cpu_stats?: { cpu_usage?: { total_usage?: number; percpu_usage?: number[] }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; stats?: Record<string, number> };
}

/**
 * CPU in percent of one CPU and memory without the inactive page cache, as `docker stats` computes
 * them (cgroup v1: `total_inactive_file`; v2: `inactive_file`). Pure; null parts when unknown.
 */
export function readingOf(stats: StatsReading): { cpu_percent: number | null; memory_bytes: number | null } {
  const cpu = stats.cpu_stats;
  const pre = stats.precpu_stats;
  let cpuPercent: number | null = null;
  const cpuDelta = (cpu?.cpu_usage?.total_usage ?? 0) - (pre?.cpu_usage?.total_usage ?? 0);
  const systemDelta = (cpu?.system_cpu_usage ?? 0) - (pre?.system_cpu_usage ?? 0);
  if (cpu?.cpu_usage?.total_usage !== undefined && pre?.system_cpu_usage !== undefined && systemDelta > 0 && cpuDelta >= 0) {
    const cpus = cpu.online_cpus ?? cpu.cpu_usage.percpu_usage?.length ?? 1;
    cpuPercent = Math.round((cpuDelta / systemDelta) * cpus * 100 * 100) / 100;
  }
  const usage = stats.memory_stats?.usage;
  const inactive = stats.memory_stats?.stats?.total_inactive_file ?? stats.memory_stats?.stats?.inactive_file ?? 0;
  const memory = usage === undefined ? null : Math.max(0, usage - (inactive < usage ? inactive : 0));
  return { cpu_percent: cpuPercent, memory_bytes: memory };
}

async function statsOf(docker: Docker, id: string): Promise<{ cpu_percent: number | null; memory_bytes: number | null }> {
  try {
    return readingOf(await docker.getContainer(id).stats({ stream: false }));
  } catch (err) {
    // Gone or stopped between the listing and the reading: report it without one.
    const status = (err as { statusCode?: number }).statusCode;
    if (status === 404 || status === 409) return { cpu_percent: null, memory_bytes: null };
    throw err;
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function inPool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await work(items[index]!);
    }
  });
  await Promise.all(lanes);
  return out;
}

/**
 * This host's managed containers with a reading: running ones get CPU and memory from one stats
 * sample each; `withDisk` measures each container's disk use: the writable layer's size (`SizeRw`,
 * which Docker gets by walking the layer, so it is measured less often than the rest: the caller
 * decides) plus the used bytes of its sandbox disk, when mounted (one `statfs`).
 */
export async function listHostContainers(docker: Docker, hostId: string, options: { withDisk: boolean }): Promise<InventoryContainer[]> {
  const listed = await docker.listContainers({ all: true, size: options.withDisk, filters: hostLabelFilter(hostId) });
  return inPool(listed, STATS_CONCURRENCY, async (c): Promise<InventoryContainer> => {
    const state = stateOf(c.State);
    const reading = state === 'running' ? await statsOf(docker, c.Id) : { cpu_percent: null, memory_bytes: null };
    const labels = c.Labels ?? {};
    return {
      container_id: c.Id,
      name: cleanText((c.Names[0] ?? c.Id).replace(/^\//, '')).slice(0, 256),
      group_id: labelValue(labels[SANDBOX_LABELS.group], 256),
      generation: labelValue(labels[SANDBOX_LABELS.generation], 64),
      state,
      ...reading,
      disk_bytes: options.withDisk ? await diskBytesOf(c) : null,
    };
  });
}

/** The layer's size plus the sandbox disk's used bytes; null when neither is known. */
async function diskBytesOf(c: Docker.ContainerInfo): Promise<number | null> {
  const layer = sizeRw(c);
  const disk = sandboxDiskOfMounts(c.Mounts);
  const used = disk ? (await sandboxDiskUsage(disk).catch(() => undefined))?.usedBytes : undefined;
  return layer === null && used === undefined ? null : (layer ?? 0) + (used ?? 0);
}

/** `SizeRw` of a listing made with `size: true` (absent from dockerode's type). */
function sizeRw(c: Docker.ContainerInfo): number | null {
  const size = (c as Docker.ContainerInfo & { SizeRw?: unknown }).SizeRw;
  return typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : null;
}

export type OrphanRemoval = 'removed' | 'gone' | 'refused';

/**
 * Removes one container the API named as an orphan past its grace period: by id, forced (an
 * orphan may be running), volumes and sandbox disk with it, and only when it still carries this
 * host's managed labels (an id that now names anything else is refused). A container already gone
 * is `gone`. `diskRoot` is this host's `AGENT_SANDBOX_DISK_DIR`.
 */
export async function removeOrphanContainer(docker: Docker, hostId: string, containerId: string, diskRoot: string): Promise<OrphanRemoval> {
  if (!/^[0-9a-f]{64}$/.test(containerId)) return 'refused';
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(containerId).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return 'gone';
    throw err;
  }
  const labels = info.Config.Labels ?? {};
  if (labels[MANAGED_LABEL] !== 'true' || labels[SANDBOX_LABELS.host] !== hostId) return 'refused';
  try {
    await removeContainerAndDisk(docker, info, { force: true, diskRoot });
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    if (status === 404) return 'gone';
    // 409: removal already in progress; the next report shows whether it finished.
    if (status !== 409) throw err;
  }
  return 'removed';
}
