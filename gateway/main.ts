/**
 * The gateway process (`npm run gateway`). Runs with or without a database (spec 4.2: a
 * configured but unreachable database at startup is reported by `/health`, not fatal).
 */
import { createDb } from '../lib/db';
import { createLogger } from '../lib/logger';
import { serve } from '../lib/http/serve';
import { databaseConfigured, loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { createGatewayListener } from './server';
import { DatabaseState } from './store/database-state';
import { loadGatewayConfiguration } from './registry';
import { RegistryHolder } from './registry/holder';
import { gatewayContextDeps } from './deps';

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const log = createLogger({ name: 'gateway', level: settings.LOG_LEVEL });
  const db = databaseConfigured(settings) && settings.DATABASE_URL
    ? createDb({ url: settings.DATABASE_URL, poolMax: settings.DATABASE_POOL_MAX, applicationName: 'gateway' })
    : null;
  // Configuration errors (unknown router, invalid embeddings path…) throw here and stop startup.
  const { registry } = loadGatewayConfiguration({ settings, env: process.env, cwd: process.cwd(), log });
  const database = new DatabaseState(db, log);
  await database.startup();
  const context = gatewayContextDeps(settings, new RegistryHolder(registry));
  const app = createGatewayListener({ log, database, ...context });
  const serving = await serve(app, { host: settings.GATEWAY_HOST, port: settings.GATEWAY_PORT });
  const shutdown = createShutdown({ log, graceMs: settings.SHUTDOWN_GRACE_SECONDS * 1000 });
  shutdown.add({ name: 'http', run: () => serving.close(settings.SHUTDOWN_GRACE_SECONDS * 1000) });
  shutdown.add({ name: 'upstream pools', run: () => context.upstream.close() });
  shutdown.add({ name: 'database', run: async () => { database.stop(); await db?.destroy(); } });
  log.info({ url: serving.url, database: database.configured }, 'gateway listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
