/**
 * The control worker: polls task queue `control` (every workflow, and activities that touch
 * PostgreSQL, object storage or the gateway), reconciles queued turns with their chat workflows
 * and pending publications with their publish workflows (docs/publisher.md),
 * and creates or updates the Schedules of the deletion sweep (docs/chat-deletion.md), the idle
 * stop (docs/sandboxes.md "Idle stop") and the daily public stats snapshot (docs/public-stats.md)
 * at startup. Entry of `npm run worker:control`.
 */
import { Worker } from '@temporalio/worker';
import { createDb } from '../lib/db';
import { openObjectStore } from '../lib/object-store';
import { createLogger } from '../lib/logger';
import { Periodic } from '../lib/periodic';
import { loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { connectWorker, createTemporalClient, installTemporalRuntime, stopWorker } from '../lib/temporal';
import { createControlActivities } from '../activities/control';
import { reconcileQueuedTurns } from '../activities/control/chat-reconciler';
import { GatewayGrantClient } from '../agent/grants/gateway-grant-client';
import { ChatDelivery } from '../agent/jobs/chat-delivery';
import { ensureDeletionSweepSchedule } from '../agent/deletion/sweep-schedule';
import { ensureIdleStopSchedule } from '../agent/sandboxes/idle-stop-schedule';
import { ensurePublicStatsSchedule } from '../activities/control/public-stats-schedule';
import { publicStatsJob } from '../gateway/ops/public-stats/snapshot';
import { AgentSettings, liveSettings } from '../agent/settings/settings-sync';
import { SourceControlApp } from '../agent/jobs/source-control-app';
import { PublishDelivery, reconcilePendingPublications } from '../agent/source/publish-delivery';
// The composition root may build the forge adapters (docs/architecture.md: the one exception).
import { forgeFor, forgesFromSettings } from '../activities/forge/forges';

const RECONCILE_EVERY_MS = 30_000;

async function main(): Promise<void> {
  const env = loadSettings(process.env);
  const log = createLogger({ name: 'control-worker', level: env.LOG_LEVEL });
  if (!env.DATABASE_URL) throw new Error('DATABASE_URL is required by the control worker');
  if (!env.GATEWAY_GRANT_DISPATCH_TOKEN) throw new Error('GATEWAY_GRANT_DISPATCH_TOKEN is required by the control worker (inference grants)');
  installTemporalRuntime(log);
  const shutdown = createShutdown({ log, graceMs: env.SHUTDOWN_GRACE_SECONDS * 1000 });
  const db = createDb({ url: env.DATABASE_URL, poolMax: env.DATABASE_POOL_MAX, applicationName: 'control-worker' });
  // Admin settings (the gateway URL, title generation) and host settings (the limits of turns
  // admitted afterwards) follow changes within 5 s (docs/agent-admin.md "Settings", "Host settings").
  const agentSettings = new AgentSettings(db, env, log);
  await agentSettings.start();
  shutdown.add({ name: 'settings sync', run: () => Promise.resolve(agentSettings.stop()) });
  const settings = liveSettings(env, agentSettings);
  const grants = new GatewayGrantClient({ gatewayUrl: () => settings.AGENT_GATEWAY_URL, dispatchToken: env.GATEWAY_GRANT_DISPATCH_TOKEN });
  // Sandbox archives (docs/sandboxes.md "Archives"): the configured store (the embedded fs store by default).
  const objectStore = await openObjectStore(settings);
  // The publisher's forges (docs/publisher.md): without one, completed turns' patches wait unpublished.
  const sourceControl = new SourceControlApp(settings, log);
  const forges = forgesFromSettings(settings, () => sourceControl.current());
  const publisherForge = forges.length > 0 ? { forgeFor: (repo: string) => forgeFor(forges, repo)?.forge } : {};
  const connection = await connectWorker(settings);
  const { client, connection: clientConnection } = createTemporalClient(settings);
  const worker = await Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
    // npm start's prebuilt bundle (rebuilt whenever dist/workflows changes), else bundled here.
    ...(env.TEMPORAL_WORKFLOW_BUNDLE_PATH
      ? { workflowBundle: { codePath: env.TEMPORAL_WORKFLOW_BUNDLE_PATH } }
      : { workflowsPath: require.resolve('../workflows') }),
    activities: createControlActivities({ db, settings, grants, log, objectStore, temporal: client, agentSettings, ...publisherForge, publicStats: publicStatsJob(db, env.DB_STORE_FULL_CONTENT) }),
  });
  const scheduleId = await ensureDeletionSweepSchedule(client, settings).catch((err: unknown) => {
    throw new Error(`the deletion sweep's Schedule ${settings.AGENT_DELETION_SWEEP_SCHEDULE_ID} could not be created or updated in namespace ${settings.TEMPORAL_NAMESPACE} (check the Temporal server and AGENT_DELETION_SWEEP_SCHEDULE_ID)`, { cause: err });
  });
  log.info({ event: 'agent_deletion_sweep_scheduled', schedule_id: scheduleId }, 'deletion sweep scheduled every minute');
  const idleStopId = await ensureIdleStopSchedule(client, settings).catch((err: unknown) => {
    throw new Error(`the idle stop's Schedule ${settings.AGENT_IDLE_STOP_SCHEDULE_ID} could not be created or updated in namespace ${settings.TEMPORAL_NAMESPACE} (check the Temporal server and AGENT_IDLE_STOP_SCHEDULE_ID)`, { cause: err });
  });
  log.info({ event: 'agent_idle_stop_scheduled', schedule_id: idleStopId }, 'idle sandbox stop scheduled every minute');
  const publicStatsId = await ensurePublicStatsSchedule(client, settings).catch((err: unknown) => {
    throw new Error(`the public stats Schedule ${settings.PUBLIC_STATS_SCHEDULE_ID} could not be created or updated in namespace ${settings.TEMPORAL_NAMESPACE} (check the Temporal server and PUBLIC_STATS_SCHEDULE_ID)`, { cause: err });
  });
  log.info({ event: 'public_stats_scheduled', schedule_id: publicStatsId }, 'public stats snapshot scheduled daily');
  const delivery = new ChatDelivery(client, settings, log);
  const publications = new PublishDelivery(client, settings, log);
  const reconciler = new Periodic(async () => {
    await reconcileQueuedTurns({ db, delivery, log, minQueuedSeconds: 30 }).catch((err: unknown) => {
      log.warn({ err }, 'queued-turn reconciliation failed; retrying on schedule');
    });
    if (forges.length === 0) return;
    await reconcilePendingPublications({ db, delivery: publications, log, minAgeSeconds: 30 }).catch((err: unknown) => {
      log.warn({ err }, 'publication reconciliation failed; retrying on schedule');
    });
  }, RECONCILE_EVERY_MS, log, 'queued-turn and publication reconciliation');
  const running = worker.run();
  await reconciler.start();
  shutdown.add({ name: 'reconciler', run: () => Promise.resolve(reconciler.stop()) });
  shutdown.add({ name: 'temporal worker', run: () => stopWorker(worker, running) });
  shutdown.add({ name: 'temporal connections', run: async () => { await clientConnection.close(); await connection.close(); } });
  shutdown.add({ name: 'database pool', run: () => db.destroy() });
  log.info({ taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE, address: settings.TEMPORAL_ADDRESS }, 'control worker polling');
  await running;
}

main().catch((err: unknown) => {
  process.stderr.write(`control worker failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
