/**
 * `npm run pgadmin`: starts pgAdmin 4 for the dev stack as the database tool saved through
 * `POST /admin/agent/database/pgadmin/setup` (docs/agent-admin.md "pgAdmin"). The saved URL must be
 * `http://127.0.0.1:<port>` (the port pgAdmin listens on); its administrator is
 * `PGADMIN_SETUP_EMAIL` (default `admin@example.com`) with the saved initial password, opened with
 * `AGENT_SETTINGS_ENCRYPTION_KEY`. pgAdmin keeps its state in `.data/pgadmin` and outlives this
 * command (stop it by the pid printed). Installs pgAdmin first when missing.
 */
import { join } from 'node:path';
import { decodeStored, readStoredSettings } from '../../agent/settings/admin-settings';
import { createDb, type Db } from '../../lib/db';
import { loadSettings } from '../../lib/settings';
import { savedDatabaseToolPassword } from './database-tool-password';
import { ensurePgadmin, startPgadmin } from './pgadmin';
import { DEV_DATABASE_URL } from './postgres';
import { DATA, say } from './sh';

/** The port of the saved tool URL, which must name this machine's loopback over http. */
async function savedLoopbackPort(db: Db): Promise<number> {
  const row = (await readStoredSettings(db)).rows.find((r) => r.key === 'database_tool_url');
  const decoded = row ? decodeStored(row, undefined) : undefined;
  const url = decoded && 'value' in decoded && typeof decoded.value === 'string' ? new URL(decoded.value) : undefined;
  if (!url) throw new Error('No database tool URL is saved: POST /admin/agent/database/pgadmin/setup with {"url": "http://127.0.0.1:5050", "password": …} first');
  if (url.protocol !== 'http:' || url.hostname !== '127.0.0.1' || !url.port) throw new Error(`The saved database tool URL ${url.href} is not http://127.0.0.1:<port>, where this command starts pgAdmin`);
  return Number(url.port);
}

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'pgadmin-start', poolMax: 1 });
  try {
    const port = await savedLoopbackPort(db);
    const password = await savedDatabaseToolPassword(db, settings.AGENT_SETTINGS_ENCRYPTION_KEY);
    await ensurePgadmin();
    const email = process.env.PGADMIN_SETUP_EMAIL || 'admin@example.com';
    const server = await startPgadmin({ dataDir: join(DATA, 'pgadmin'), port, email, password, detached: true });
    say(`pgAdmin ${server.url} (pid ${server.pid}; administrator ${email}); open it through /api/admin/agent/pgadmin/`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(`[pgadmin] ${(err as Error).message}`);
  process.exit(1);
});
