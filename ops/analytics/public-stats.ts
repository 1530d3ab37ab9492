/**
 * `npm run public-stats -- [--dry-run] [--weeks N]`: takes a public stats snapshot now
 * (docs/public-stats.md), the job the control worker's daily Schedule runs. `--weeks N` sets the
 * window (whole UTC weeks, 1 to 520; default 26); `--dry-run` prints the snapshot's JSON and writes
 * nothing. The language section is included when `DB_STORE_FULL_CONTENT=true`. Uses
 * `DATABASE_URL` (the dev stack's when unset). Exit status: 0 done, 1 failed, 2 bad arguments.
 */
import { parseArgs } from 'node:util';
import { createDb } from '../../lib/db';
import { loadSettings } from '../../lib/settings';
import { DEFAULT_WEEKS, MAX_WEEKS } from '../../gateway/ops/public-stats/content';
import { buildPublicStats, storePublicStats } from '../../gateway/ops/public-stats/snapshot';
import { DEV_DATABASE_URL } from '../dev/postgres';

const USAGE = 'usage: npm run public-stats -- [--dry-run] [--weeks N]';

/** Thrown for arguments the job cannot run with (exit status 2). */
export class UsageError extends Error {}

/** The job's arguments; throws {@link UsageError} naming the problem. */
export function parsePublicStatsArgs(args: string[]): { dryRun: boolean; weeks: number } {
  let values: { 'dry-run'?: boolean; weeks?: string };
  try {
    ({ values } = parseArgs({ args, options: { 'dry-run': { type: 'boolean', default: false }, weeks: { type: 'string' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const raw = values.weeks;
  const weeks = raw === undefined ? DEFAULT_WEEKS : Number(raw);
  if (raw !== undefined && (!/^\d+$/.test(raw) || weeks < 1 || weeks > MAX_WEEKS)) {
    throw new UsageError(`--weeks must be a whole number of weeks from 1 to ${MAX_WEEKS} (got ${JSON.stringify(raw)})\n${USAGE}`);
  }
  return { dryRun: values['dry-run'] ?? false, weeks };
}

async function main(): Promise<void> {
  const { dryRun, weeks } = parsePublicStatsArgs(process.argv.slice(2));
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'public-stats', poolMax: 1 });
  try {
    const content = await buildPublicStats(db, { weeks, languages: settings.DB_STORE_FULL_CONTENT });
    if (dryRun) {
      process.stdout.write(`${JSON.stringify(content, null, 2)}\n`);
      return;
    }
    const id = await storePublicStats(db, content);
    process.stdout.write(`Stored public stats snapshot ${id} (${weeks} weeks ending ${content.window.end})\n`);
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`public-stats: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  });
}
