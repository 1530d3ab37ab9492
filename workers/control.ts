/**
 * The control worker: polls task queue `control` (every workflow, and activities that touch
 * PostgreSQL, object storage or the gateway). Entry of `npm run worker:control`.
 */
import { Worker } from '@temporalio/worker';
import { createLogger } from '../lib/logger';
import { loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { connectWorker, installTemporalRuntime, stopWorker } from '../lib/temporal';

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const log = createLogger({ name: 'control-worker', level: settings.LOG_LEVEL });
  installTemporalRuntime(log);
  const shutdown = createShutdown({ log, graceMs: settings.SHUTDOWN_GRACE_SECONDS * 1000 });
  const connection = await connectWorker(settings);
  const worker = await Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
    workflowsPath: require.resolve('../workflows'),
    activities: {},
  });
  const running = worker.run();
  shutdown.add({ name: 'temporal worker', run: () => stopWorker(worker, running) });
  shutdown.add({ name: 'temporal connection', run: () => connection.close() });
  log.info({ taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE, address: settings.TEMPORAL_ADDRESS }, 'control worker polling');
  await running;
}

main().catch((err: unknown) => {
  process.stderr.write(`control worker failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
