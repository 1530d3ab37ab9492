/**
 * `npm run migrate` (apply pending), `npm run migrate:down` (revert the last batch),
 * `tsx ops/db/migrate.ts status`. Uses `DATABASE_URL` (the dev default when unset).
 */
import { createDb } from '../../lib/db';
import { migrateDown, migrateLatest, migrationStatus } from '../../migrations/runner';
import { loadSettings } from '../../lib/settings';
import { DEV_DATABASE_URL } from '../dev/postgres';

async function main(): Promise<void> {
  const command = process.argv[2] ?? 'up';
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'migrate' });
  try {
    if (command === 'up') {
      const applied = await migrateLatest(db);
      console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Already up to date');
    } else if (command === 'down') {
      const reverted = await migrateDown(db);
      console.log(reverted.length ? `Reverted: ${reverted.join(', ')}` : 'Nothing to revert');
    } else if (command === 'status') {
      console.log(JSON.stringify(await migrationStatus(db), null, 2));
    } else {
      throw new Error(`Unknown command ${command}: use up, down or status`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
