/**
 * The database tool's saved initial password (docs/agent-admin.md "Database tool"): the setup
 * route (`POST /admin/agent/database/pgadmin/setup`) stores it as the write-only setting
 * `database_tool_password`, sealed with `AGENT_SETTINGS_ENCRYPTION_KEY`. Whoever starts the tool
 * (the tests, the dev stack: ops/dev/pgadmin.ts) reads it here, with that key, and hands it to
 * pgAdmin's first start as its administrator's password. It is never printed or logged.
 */
import type { Knex } from 'knex';
import { decodeStored, readStoredSettings } from '../../agent/settings/admin-settings';
import { SecretSealer } from '../../lib/sealed-secret';

/** The saved initial password; an Error naming what is missing otherwise. */
export async function savedDatabaseToolPassword(db: Knex, encryptionKey: string | undefined): Promise<string> {
  const { rows } = await readStoredSettings(db);
  const row = rows.find((r) => r.key === 'database_tool_password');
  if (!row) throw new Error('No database tool password is saved: POST /admin/agent/database/pgadmin/setup first');
  if (!encryptionKey) throw new Error('The database tool password cannot be opened: AGENT_SETTINGS_ENCRYPTION_KEY is not set');
  const decoded = decodeStored(row, new SecretSealer(encryptionKey));
  if ('problem' in decoded) throw new Error(`The database tool password cannot be opened: ${decoded.problem}`);
  return String(decoded.value);
}
