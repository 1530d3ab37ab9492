/**
 * The host runner: one per execution host. Polls task queue `host:<hostId>` with activities that
 * use the local Docker engine, and heartbeats `slots_total`, runtime and attestations to the API
 * with its enrollment-issued credential. Entry of `npm run worker:host`.
 */
import { hostname } from 'node:os';
import Docker from 'dockerode';
import { Worker } from '@temporalio/worker';
import { createLogger, type Logger } from '../lib/logger';
import { loadSettings, type Settings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { connectWorker, installTemporalRuntime, stopWorker } from '../lib/temporal';
import { createHostActivities } from '../activities/host-activities';
import { createObjectStore } from '../lib/object-store';
import { hostTaskQueue } from '../workflows/names';

const RUNNER_VERSION = '1';

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
      objectStore: createObjectStore(settings),
    }),
    maxConcurrentActivityTaskExecutions: settings.AGENT_HOST_SLOTS * 4,
  });
  const stopHeartbeat = startHeartbeat({ settings, log, hostId, runtime: `docker-${engine.Version}` });
  const running = worker.run();
  shutdown.add({ name: 'heartbeat', run: () => Promise.resolve(stopHeartbeat()) });
  shutdown.add({ name: 'temporal worker', run: () => stopWorker(worker, running) });
  shutdown.add({ name: 'temporal connection', run: () => connection.close() });
  log.info({ hostId, taskQueue, docker: engine.Version }, 'host runner polling');
  await running;
}

/** Heartbeats now and every interval; a failed beat is logged and retried at the next tick. */
function startHeartbeat(options: { settings: Settings; log: Logger; hostId: string; runtime: string }): () => void {
  const { settings, log, hostId, runtime } = options;
  const url = new URL(`/v1/agent/hosts/${encodeURIComponent(hostId)}/heartbeat`, settings.AGENT_API_URL);
  const beat = async (): Promise<void> => {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${settings.AGENT_HOST_CREDENTIAL}`, 'content-type': 'application/json' },
        body: JSON.stringify({ slots_total: settings.AGENT_HOST_SLOTS, runtime, runner_version: RUNNER_VERSION, capabilities: ['container'] }),
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) log.warn({ status: res.status }, 'host heartbeat refused');
      else log.debug(await res.json(), 'host heartbeat');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'host heartbeat failed');
    }
  };
  void beat();
  const timer = setInterval(() => void beat(), settings.AGENT_HOST_HEARTBEAT_SECONDS * 1000);
  return () => clearInterval(timer);
}

main().catch((err: unknown) => {
  process.stderr.write(`host runner failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
