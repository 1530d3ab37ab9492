/**
 * The host runner: one per execution host. Polls task queue `host:<hostId>` with activities that
 * use the local Docker engine, heartbeats `slots_total`, runtime and attestations to the API
 * with its enrollment-issued credential, and reports its containers every 30 s (host-inventory.ts).
 * Entry of `npm run worker:host`.
 */
import { hostname } from 'node:os';
import Docker from 'dockerode';
import { Worker } from '@temporalio/worker';
import { createLogger } from '../lib/logger';
import { loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { connectWorker, installTemporalRuntime, stopWorker } from '../lib/temporal';
import { createHostActivities } from '../activities/host-activities';
import { HostApiClient } from '../activities/agent/host-api-client';
import { openObjectStore } from '../lib/object-store';
import { hostTaskQueue } from '../workflows/definitions/task-queues';
import { createHeartbeat, MAX_HOST_SLOTS } from './host-heartbeat';
import { createInventoryReporter } from './host-inventory';
import { relayRoot } from '../agent/sandboxes/names';

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const log = createLogger({ name: 'host-runner', level: settings.LOG_LEVEL });
  const hostId = settings.AGENT_HOST_ID ?? hostname().toLowerCase();
  if (!settings.AGENT_HOST_CREDENTIAL) {
    throw new Error('AGENT_HOST_CREDENTIAL is not set: enroll this host (npm run enroll-host -- --host <id>) and pass its credential');
  }
  installTemporalRuntime(log);
  const shutdown = createShutdown({ log, graceMs: settings.SHUTDOWN_GRACE_SECONDS * 1000 });
  const docker = new Docker({ socketPath: settings.DOCKER_SOCKET_PATH });
  const engine = (await docker.version()) as { Version: string };
  const connection = await connectWorker(settings);
  const taskQueue = hostTaskQueue(hostId);
  const worker = await Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue,
    activities: createHostActivities({
      docker,
      hostId,
      image: settings.AGENT_SANDBOX_IMAGE,
      limits: { memoryBytes: settings.AGENT_SANDBOX_MEMORY_BYTES, nanoCpus: Math.round(settings.AGENT_SANDBOX_CPUS * 1e9) },
      objectStore: await openObjectStore(settings),
      relayRoot: relayRoot(settings.AGENT_RELAY_DIR),
      archiveMemorySpoolBytes: settings.AGENT_ARCHIVE_MEMORY_SPOOL_MIB * 1024 * 1024,
      turns: {
        api: new HostApiClient({ apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL }),
        apiUrl: settings.AGENT_API_URL, credential: settings.AGENT_HOST_CREDENTIAL, gatewayUrl: settings.AGENT_GATEWAY_URL, settings,
        relayRoot: relayRoot(settings.AGENT_RELAY_DIR),
      },
    }),
    // Admission (slots) is the control plane's; this only must not undercut a raised slot count.
    maxConcurrentActivityTaskExecutions: MAX_HOST_SLOTS * 4,
  });
  const heartbeat = createHeartbeat({
    apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL,
    defaultSlots: settings.AGENT_HOST_SLOTS, runtime: `docker-${engine.Version}`, log,
  });
  heartbeat.start(settings.AGENT_HOST_HEARTBEAT_SECONDS * 1000);
  const inventory = createInventoryReporter({
    apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL, docker, log,
    diskEveryMs: settings.AGENT_INVENTORY_DISK_SECONDS * 1000,
  });
  inventory.start(settings.AGENT_INVENTORY_REFRESH_SECONDS * 1000);
  const running = worker.run();
  shutdown.add({ name: 'heartbeat', run: () => Promise.resolve(heartbeat.stop()) });
  shutdown.add({ name: 'inventory', run: () => Promise.resolve(inventory.stop()) });
  shutdown.add({ name: 'temporal worker', run: () => stopWorker(worker, running) });
  shutdown.add({ name: 'temporal connection', run: () => connection.close() });
  log.info({ hostId, taskQueue, docker: engine.Version }, 'host runner polling');
  await running;
}

main().catch((err: unknown) => {
  process.stderr.write(`host runner failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
