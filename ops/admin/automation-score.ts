/**
 * `npm run automation-score -- [--days N] [--min-requests N] [--user ID] [--json]`: the automation
 * score (docs/automation-score.md) from the operator's shell. Without `--user`, every user with at
 * least `--min-requests` rows (default 1) in the last `--days` (1..90, default 30), highest score
 * first; with `--user`, that user. A table on stdout, or the admin API's JSON with `--json`. Uses
 * `DATABASE_URL` (the dev stack's when unset). Bad flags: usage on stderr, exit 2; an unknown user:
 * exit 1.
 */
import { parseArgs } from 'node:util';
import { createDb, type Db } from '../../lib/db';
import { loadSettings } from '../../lib/settings';
import { DEFAULT_WINDOW_DAYS, MAX_WINDOW_DAYS, scorePage, scoreUser, type AutomationScore } from '../../gateway/ops/automation-score';
import { DEV_DATABASE_URL } from '../dev/postgres';

export const USAGE = 'usage: npm run automation-score -- [--days N (1..90, default 30)] [--min-requests N (default 1)] [--user ID] [--json]';
const PAGE = 500;

export interface CliOptions {
  days: number;
  minRequests: number;
  userId: number | undefined;
  json: boolean;
}

/** Thrown for a bad command line: the message, then the usage, exit 2. */
export class UsageError extends Error {}

function integerFlag(name: string, raw: string | undefined, min: number, max: number, fallback?: number): number | undefined {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new UsageError(`--${name}: expected an integer from ${min} to ${max}, got '${raw}'`);
  return Number(raw);
}

/** The options of a command line (without node and the script). */
export function parseCli(argv: string[]): CliOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: { days: { type: 'string' }, 'min-requests': { type: 'string' }, user: { type: 'string' }, json: { type: 'boolean', default: false } },
    }).values;
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  return {
    days: integerFlag('days', values.days as string | undefined, 1, MAX_WINDOW_DAYS, DEFAULT_WINDOW_DAYS)!,
    minRequests: integerFlag('min-requests', values['min-requests'] as string | undefined, 1, 1_000_000_000, 1)!,
    userId: integerFlag('user', values.user as string | undefined, 1, Number.MAX_SAFE_INTEGER),
    json: values.json === true,
  };
}

/** Every user's score of the window, highest first (ties by user id), read a page at a time. */
export async function scoreAllUsers(db: Db, options: { days: number; minRequests: number; now: Date }): Promise<AutomationScore[]> {
  const all: AutomationScore[] = [];
  let after = 0;
  for (;;) {
    const page = await scorePage(db, { days: options.days, now: options.now, limit: PAGE, afterUserId: after, minRequests: options.minRequests });
    all.push(...page.scores);
    if (page.nextAfterUserId === null) break;
    after = page.nextAfterUserId;
  }
  return all.sort((a, b) => b.score - a.score || a.user_id - b.user_id);
}

/** The table: one line per user. */
export function formatTable(scores: readonly AutomationScore[]): string {
  const header = ['user_id', 'score', 'band', 'confidence', 'requests', 'flags'];
  const rows = scores.map((s) => [
    String(s.user_id), s.score.toFixed(4), s.band, s.confidence.toFixed(4), String(s.n_requests),
    [s.insufficient_data ? 'insufficient_data' : '', s.human_clamp ? 'human_clamp' : ''].filter(Boolean).join(',') || '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

async function run(options: CliOptions, db: Db): Promise<number> {
  const now = new Date();
  if (options.userId !== undefined) {
    const user: unknown = await db('users').where({ id: options.userId }).first('id');
    if (user === undefined) {
      console.error(`automation-score: no user ${options.userId}`);
      return 1;
    }
    const score = await scoreUser(db, options.userId, { days: options.days, now });
    console.log(options.json ? JSON.stringify(score, null, 2) : formatTable([score]));
    return 0;
  }
  const scores = await scoreAllUsers(db, { days: options.days, minRequests: options.minRequests, now });
  if (options.json) {
    console.log(JSON.stringify({ window_days: options.days, computed_at: now.toISOString(), min_requests: options.minRequests, data: scores }, null, 2));
  } else {
    console.log(`# automation score, last ${options.days} days (UTC), users with at least ${options.minRequests} requests: ${scores.length}`);
    console.log(formatTable(scores));
  }
  return 0;
}

async function main(): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`automation-score: ${err.message}\n${USAGE}`);
    return 2;
  }
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'automation-score', poolMax: 1 });
  try {
    return await run(options, db);
  } finally {
    await db.destroy();
  }
}

/** A failure in a line: PostgreSQL's own message without the statement knex prefixes it with. */
function failureText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const sqlstate = (err as { code?: unknown }).code;
  const cut = err.message.lastIndexOf(' - ');
  return typeof sqlstate === 'string' && cut >= 0 ? `${err.message.slice(cut + 3)} (SQLSTATE ${sqlstate})` : err.message;
}

if (require.main === module) {
  main().then((code) => process.exit(code), (err: unknown) => {
    console.error(`automation-score: ${failureText(err)}`);
    process.exit(1);
  });
}
