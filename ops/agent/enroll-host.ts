/**
 * Operator script: enroll an execution host (or rotate its credential).
 * `npm run enroll-host -- --host <id>` prints the credential once; give it to that host's runner
 * as `AGENT_HOST_CREDENTIAL`. Only its SHA-256 digest is stored.
 */
import { parseArgs } from 'node:util';
import { createDb } from '../../lib/db';
import { loadSettings } from '../../lib/settings';
import { enrollHost } from '../../agent/hosts/host-registry';
import { DEV_DATABASE_URL } from '../dev/postgres';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { host: { type: 'string' }, json: { type: 'boolean', default: false } } });
  if (!values.host) throw new Error('usage: enroll-host --host <id> [--json]');
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'enroll-host' });
  try {
    const enrolled = await enrollHost(db, values.host);
    if (values.json) console.log(JSON.stringify({ host_id: enrolled.hostId, credential: enrolled.credential }));
    else console.log(`Enrolled host ${enrolled.hostId}. Credential (shown once):\n${enrolled.credential}`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
