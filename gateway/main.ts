/**
 * The gateway process (`npm run gateway`). Runs with or without a database (a
 * configured but unreachable database at startup is reported by `/health`, not fatal).
 */
import { createDb } from '../lib/db';
import { createLogger } from '../lib/logger';
import { serve } from '../lib/http/serve';
import { databaseConfigured, loadSettings } from '../lib/settings';
import { createShutdown } from '../lib/shutdown';
import { assembleGateway } from './assemble';

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const log = createLogger({ name: 'gateway', level: settings.LOG_LEVEL });
  const db = databaseConfigured(settings) && settings.DATABASE_URL
    ? createDb({ url: settings.DATABASE_URL, poolMax: settings.DATABASE_POOL_MAX, applicationName: 'gateway', log })
    : null;
  // Configuration errors (unknown router, invalid embeddings path…) throw here and stop startup.
  const gateway = assembleGateway({ settings, env: process.env, cwd: process.cwd(), log, db });
  await gateway.start();
  const serving = await serve(gateway.listener, { host: settings.GATEWAY_HOST, port: settings.GATEWAY_PORT });
  const shutdown = createShutdown({ log, graceMs: settings.SHUTDOWN_GRACE_SECONDS * 1000 });
  shutdown.add({ name: 'http', run: () => serving.close(settings.SHUTDOWN_GRACE_SECONDS * 1000) });
  shutdown.add({ name: 'gateway background work', run: () => gateway.stop() });
  shutdown.add({ name: 'database', run: async () => { await db?.destroy(); } });
  log.info({ url: serving.url, database: db !== null }, 'gateway listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
