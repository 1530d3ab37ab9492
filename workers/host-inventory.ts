/**
 * The host runner's inventory refresh (every 30 s by default; docs/sandboxes.md "Reconciler"): lists
 * this host's managed containers with a resource reading, reports them to the API (contract
 * `hostInventory` of lib/contracts/host-api.ts, the host's own credential) and removes exactly the
 * orphan containers the API answers with. Its own call, not part of the heartbeat: the heartbeat
 * is small, frequent (15 s) and decides whether the host is online, while a report is larger, takes
 * Docker a second per running container to sample, and carries removal orders in its answer.
 */
import type Docker from 'dockerode';
import type { ResponseOf } from '../lib/contracts/endpoint';
import * as hostApi from '../lib/contracts/host-api';
import { InternalCallError, InternalClient } from '../lib/http/internal-client';
import type { Logger } from '../lib/logger';
import { listHostContainers, removeOrphanContainer, type OrphanRemoval } from '../activities/docker/container-inventory';

/** A report waits this long for the API (it reconciles every container in one transaction). */
export const INVENTORY_TIMEOUT_MS = 30_000;

export interface InventoryOptions {
  apiUrl: string;
  hostId: string;
  /** The enrollment-issued host credential (never logged). */
  credential: string;
  docker: Docker;
  log: Logger;
  /** Where this host keeps its sandboxes' disks (`AGENT_SANDBOX_DISK_DIR`): an orphan's disk is released with it. */
  sandboxDiskDir: string;
  /** Disk (`SizeRw` and the sandbox disk's use) is measured in a report when this long has passed since the last measurement (`AGENT_INVENTORY_DISK_SECONDS`). */
  diskEveryMs: number;
  fetch?: typeof fetch;
}

export type InventoryAnswer = ResponseOf<typeof hostApi.hostInventory>;

export type ReportResult =
  | { ok: true; reported: number; answer: InventoryAnswer; removals: Record<string, OrphanRemoval> }
  | { ok: false; status?: number; error?: string };

export interface InventoryReporter {
  /** One report and the removals it orders; never throws (failures are logged and returned). */
  reportOnce(): Promise<ReportResult>;
  /** Reports now and every `intervalMs` (a report still running skips the next tick). */
  start(intervalMs: number): void;
  stop(): void;
}

export function createInventoryReporter(options: InventoryOptions): InventoryReporter {
  const { log, docker, hostId } = options;
  const http = new InternalClient({
    service: 'control-plane API', baseUrl: options.apiUrl, token: options.credential, timeoutMs: INVENTORY_TIMEOUT_MS, fetch: options.fetch,
  });
  let lastDiskAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<ReportResult> | undefined;

  const report = async (): Promise<ReportResult> => {
    try {
      const withDisk = Date.now() - lastDiskAt >= options.diskEveryMs;
      const containers = await listHostContainers(docker, hostId, { withDisk });
      if (withDisk) lastDiskAt = Date.now();
      const answer = await http.call(hostApi.hostInventory, { params: { hostId }, body: { containers } });
      const removals: Record<string, OrphanRemoval> = {};
      for (const id of answer.remove) {
        removals[id] = await removeOrphanContainer(docker, hostId, id, options.sandboxDiskDir);
        log.info({ event: 'agent_sandbox_orphan_removed_by_host', host_id: hostId, container_id: id, result: removals[id] }, 'orphan sandbox container removal');
      }
      log.debug({ host_id: hostId, reported: containers.length, ...answer }, 'host inventory reported');
      return { ok: true, reported: containers.length, answer, removals };
    } catch (err) {
      if (err instanceof InternalCallError && err.failure === 'status') {
        log.warn({ status: err.status }, 'host inventory report refused');
        return { ok: false, status: err.status };
      }
      log.warn({ err: (err as Error).message }, 'host inventory report failed');
      return { ok: false, error: (err as Error).message };
    }
  };

  const reportOnce = (): Promise<ReportResult> => {
    // One report at a time: a removal ordered by one answer is never raced by the next listing.
    running ??= report().finally(() => { running = undefined; });
    return running;
  };

  return {
    reportOnce,
    start(intervalMs) {
      if (timer) return;
      void reportOnce();
      timer = setInterval(() => void reportOnce(), intervalMs);
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
