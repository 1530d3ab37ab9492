/**
 * The host runner: one per execution host. Runs its runtime preflight (workers/host-preflight.ts),
 * polls task queue `host:<hostId>` with activities that
 * use the local Docker engine, heartbeats `slots_total`, runtime and attestations to the API
 * with its enrollment-issued credential, and reports its containers every 30 s (host-inventory.ts).
 * With `AGENT_SSH_PORT` set it also serves owners' SSH into their sandboxes (host-ssh.ts).
 * Entry of `npm run worker:host`.
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
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
import { runtimesFromSettings } from '../activities/docker/container-runtime';
import { createPreflightLoop } from './host-preflight';
import { probeSandboxDisks } from '../activities/docker/sandbox-disk';
import { sweepSandboxDisks } from '../activities/docker/sandbox-removal';
import { startHostSsh } from './host-ssh';

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
  const runtimes = runtimesFromSettings(settings);
  if (runtimes.backend === 'container') {
    log.warn({ event: 'agent_shared_kernel_accepted', host_id: hostId, runtime: runtimes.trusted },
      `AGENT_SANDBOX_BACKEND=container: untrusted-vm-v1 work on this host runs under ${runtimes.trusted}, ON THE HOST'S KERNEL, by the operator's explicit choice`);
  }
  // Sandbox disks: the directory must hold them (or the runner does not start); disks whose container is gone are released.
  const sandboxDiskDir = resolve(settings.AGENT_SANDBOX_DISK_DIR);
  await probeSandboxDisks(sandboxDiskDir);
  const released = await sweepSandboxDisks(docker, sandboxDiskDir);
  if (released.length > 0) log.info({ event: 'agent_sandbox_disks_released', host_id: hostId, containers: released }, 'released sandbox disks without a container');
  // Before the first heartbeat: a host attests only what a preflight saw.
  const preflight = createPreflightLoop({ docker, image: settings.AGENT_SANDBOX_IMAGE, runtimes, hostId, log });
  await preflight.runNow();
  preflight.start(settings.AGENT_PREFLIGHT_SECONDS * 1000);
  const hostApi = new HostApiClient({ apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL });
  // Owners' SSH into their sandboxes (docs/ssh.md): off unless AGENT_SSH_PORT is set.
  const ssh = await startHostSsh({ settings, docker, api: hostApi, hostId, log });
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
      sandboxDiskDir,
      archiveMemorySpoolBytes: settings.AGENT_ARCHIVE_MEMORY_SPOOL_MIB * 1024 * 1024,
      runtimes,
      onRuntimeFailure: () => void preflight.runNow().catch(() => undefined),
      // The read-only clone credential, asked of the API for the attempt being prepared (docs/forges.md).
      cloneCredential: ({ attemptId }) => hostApi.cloneCredential(attemptId),
      turns: {
        api: hostApi,
        apiUrl: settings.AGENT_API_URL, credential: settings.AGENT_HOST_CREDENTIAL, gatewayUrl: settings.AGENT_GATEWAY_URL, settings,
        relayRoot: relayRoot(settings.AGENT_RELAY_DIR),
      },
    }),
    // Admission (slots) is the control plane's; this only must not undercut a raised slot count.
    maxConcurrentActivityTaskExecutions: MAX_HOST_SLOTS * 4,
  });
  const heartbeat = createHeartbeat({
    apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL,
    defaultSlots: settings.AGENT_HOST_SLOTS, runtime: `docker-${engine.Version}`, log, ...(ssh ? { ssh: ssh.address } : {}),
    attestation: () => {
      const latest = preflight.latest();
      return latest ? { capabilities: ['container', ...latest.attestations], preflight: latest } : { capabilities: ['container'] };
    },
  });
  heartbeat.start(settings.AGENT_HOST_HEARTBEAT_SECONDS * 1000);
  const inventory = createInventoryReporter({
    apiUrl: settings.AGENT_API_URL, hostId, credential: settings.AGENT_HOST_CREDENTIAL, docker, log, sandboxDiskDir,
    diskEveryMs: settings.AGENT_INVENTORY_DISK_SECONDS * 1000,
  });
  inventory.start(settings.AGENT_INVENTORY_REFRESH_SECONDS * 1000);
  const running = worker.run();
  shutdown.add({ name: 'heartbeat', run: () => Promise.resolve(heartbeat.stop()) });
  shutdown.add({ name: 'preflight', run: () => Promise.resolve(preflight.stop()) });
  shutdown.add({ name: 'inventory', run: () => Promise.resolve(inventory.stop()) });
  if (ssh) shutdown.add({ name: 'ssh server', run: () => ssh.server.close() });
  shutdown.add({ name: 'temporal worker', run: () => stopWorker(worker, running) });
  shutdown.add({ name: 'temporal connection', run: () => connection.close() });
  log.info({ hostId, taskQueue, docker: engine.Version }, 'host runner polling');
  await running;
}

main().catch((err: unknown) => {
  process.stderr.write(`host runner failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
