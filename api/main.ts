/**
 * The control-plane API process (`npm run api`): owners' `/v1/agent/*`, operators' `/admin/agent/*`,
 * host runner endpoints. Requires PostgreSQL; reaches Temporal lazily.
 */
import { createDb } from '../lib/db';
import { createLogger } from '../lib/logger';
import { serve } from '../lib/http/serve';
import { loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { createTemporalClient, temporalReachable } from '../lib/temporal';
import { accessTokensFrom } from '../lib/identity/access-tokens';
import { GatewayGrantClient } from '../agent/grants/gateway-grant-client';
import { openObjectStore } from '../lib/object-store';
import { createApiApp } from './app';
import { ApiMetrics } from './metrics/api-metrics';
import { SourceControlApp } from '../agent/jobs/source-control-app';
// The composition root may build the forge adapters (docs/architecture.md: the one exception).
import { forgesFromSettings, repoCredentialsOf } from '../activities/forge/forges';
import { createEventNotifier } from '../agent/events/event-notifier';
import { mcpSessionPool } from './process-services';
import { AgentSettings, liveSettings } from '../agent/settings/settings-sync';

async function main(): Promise<void> {
  const env = loadSettings(process.env);
  const log = createLogger({ name: 'api', level: env.LOG_LEVEL });
  if (!env.DATABASE_URL) throw new Error('DATABASE_URL is required by the control-plane API');
  const db = createDb({ url: env.DATABASE_URL, poolMax: env.DATABASE_POOL_MAX, applicationName: 'api' });
  const agentSettings = new AgentSettings(db, env, log);
  await agentSettings.start();
  const settings = liveSettings(env, agentSettings);
  const { connection, client } = createTemporalClient(settings);
  const tokens = accessTokensFrom(settings, log, db);
  await tokens.ring.start();
  const grants = settings.GATEWAY_GRANT_DISPATCH_TOKEN
    ? new GatewayGrantClient({ gatewayUrl: () => settings.AGENT_GATEWAY_URL, dispatchToken: settings.GATEWAY_GRANT_DISPATCH_TOKEN })
    : undefined;
  const events = createEventNotifier({ connection: { connectionString: settings.DATABASE_URL }, log });
  const objectStore = await openObjectStore(settings);
  // Repository credentials (docs/forges.md): repo tokens (SCM_TOKEN) only with the source-control app configured.
  const sourceControl = new SourceControlApp(settings, log);
  const forges = forgesFromSettings(settings, () => sourceControl.current());
  const repoCredentials = repoCredentialsOf(forges, { repoTokens: sourceControl.current().state !== 'not_configured' });
  const mcpSessions = mcpSessionPool(settings);
  const metrics = new ApiMetrics();
  await metrics.start(db, { defaultSlots: settings.AGENT_HOST_SLOTS, log });
  const app = createApiApp({
    metrics, mcpSessions, log, db, settings, agentSettings, tokens, temporal: client, temporalReachable: (ms) => temporalReachable(connection, ms), events, objectStore, repoCredentials, sourceControlApp: sourceControl,
    ...(grants ? { grants } : {}),
  });
  const serving = await serve(app, { host: settings.API_HOST, port: settings.API_PORT });
  const shutdown = createShutdown({ log, graceMs: settings.SHUTDOWN_GRACE_SECONDS * 1000 });
  shutdown.add({ name: 'http', run: () => serving.close(settings.SHUTDOWN_GRACE_SECONDS * 1000) });
  shutdown.add({ name: 'metrics refresh', run: () => Promise.resolve(metrics.stop()) });
  shutdown.add({ name: 'settings sync', run: () => Promise.resolve(agentSettings.stop()) });
  shutdown.add({ name: 'signing key sync', run: () => Promise.resolve(tokens.ring.stop()) });
  shutdown.add({ name: 'event notifier', run: () => events.close() });
  shutdown.add({ name: 'mcp sessions', run: () => Promise.resolve(mcpSessions.closeAll()) });
  shutdown.add({ name: 'temporal connection', run: () => connection.close() });
  shutdown.add({ name: 'database pool', run: () => db.destroy() });
  log.info({ url: serving.url }, 'control-plane API listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`api failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
