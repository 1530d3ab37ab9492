/**
 * `npm run bench:automation-score`: what scoring every user costs (docs/automation-score.md).
 * Fills a scratch database with 10,000 users × 100 `api_logs` rows each (over 27 days, four
 * user-agent kinds, varied turns, tokens, messages), then times, in the same run and alternating:
 * the bulk scoring of all users, paged as `GET /admin/users/automation-scores` pages (100 and 500
 * users a page), and one plain `select count(*)` over the same rows. Prints both and their ratio
 * (does not assert) and appends a section to bench/RESULTS.md (AS_NO_RESULTS=1 skips it).
 * AS_USERS / AS_ROUNDS shrink a trial run.
 */
import { execSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { scorePage, windowStart } from '../../gateway/ops/automation-score';
import { pageAggregates } from '../../gateway/ops/automation-score/aggregates-sql';
import type { Db } from '../../lib/db';
import { freshDatabase } from '../../test/support/db';

const USERS = Number(process.env.AS_USERS ?? 10_000);
const ROWS_PER_USER = 100;
const ROUNDS = Number(process.env.AS_ROUNDS ?? 3);
const PAGE_SIZES = [100, 500];

/** One statement: every user's rows, spread over 27 days (the default 30-day window holds them all). */
async function fill(db: Db): Promise<void> {
  await db.raw(`
    insert into api_logs (request_id, created_at, user_id, model, surface, status, num_user_turns, num_tool_calls, prompt_tokens,
                          user_message_chars, user_message_entropy, user_message_hash, metadata)
    select 'r-' || u || '-' || g, now() - (g * interval '6 hours 30 minutes') - ((u % 360) * interval '1 minute'), u, 'm', 'chat', 200,
           1 + (g * 7 + u) % 5, (g + u) % 3, 100 + (g * 37 + u) % 900, 20 + (g * 13 + u) % 400, 3 + (g % 10) / 10.0,
           substr(md5((u * 1000 + g % (1 + u % 40))::text), 1, 16),
           jsonb_build_object('user_agent', (array['curl/8.5.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'OpenAI/Python 1.40.0', 'claude-cli/1.0.30'])[1 + u % 4])
             || case when u % 4 = 3 then '{"agent": "claude-cli"}'::jsonb else '{}'::jsonb end
    from generate_series(1, ?::int) u, generate_series(1, ?::int) g`, [USERS, ROWS_PER_USER]);
  await db.raw('vacuum analyze api_logs');
}

async function timeCount(db: Db): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const result = await db.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from api_logs');
  return { ms: performance.now() - started, rows: Number(result.rows[0]!.n) };
}

async function timeBulk(db: Db, limit: number): Promise<{ ms: number; users: number; pages: number }> {
  const now = new Date();
  const started = performance.now();
  let after = 0;
  let users = 0;
  let pages = 0;
  for (;;) {
    const page = await scorePage(db, { days: 30, now, limit, afterUserId: after, minRequests: 1 });
    users += page.scores.length;
    pages += 1;
    if (page.nextAfterUserId === null) break;
    after = page.nextAfterUserId;
  }
  return { ms: performance.now() - started, users, pages };
}

/** The SQL alone (the same pages, no TypeScript finish): how the time splits. */
async function timeSqlOnly(db: Db, limit: number): Promise<number> {
  const since = windowStart(new Date(), 30);
  const started = performance.now();
  let after = 0;
  for (;;) {
    const rows = await pageAggregates(db, { since, afterUserId: after, limit, minRequests: 1 });
    if (rows.length < limit) break;
    after = rows[rows.length - 1]!.userId;
  }
  return performance.now() - started;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const t = await freshDatabase();
  try {
    const fillStarted = performance.now();
    await fill(t.db);
    console.log(`filled ${USERS} users × ${ROWS_PER_USER} rows in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s (vacuum analyze included)`);
    const counts: number[] = [];
    const bulk = new Map<number, number[]>(PAGE_SIZES.map((p) => [p, []]));
    const sqlOnly = new Map<number, number[]>(PAGE_SIZES.map((p) => [p, []]));
    const load = loadavg()[0]!;
    let rows = 0;
    let users = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      const count = await timeCount(t.db);
      counts.push(count.ms);
      rows = count.rows;
      for (const limit of PAGE_SIZES) {
        const run = await timeBulk(t.db, limit);
        bulk.get(limit)!.push(run.ms);
        const sql = await timeSqlOnly(t.db, limit);
        sqlOnly.get(limit)!.push(sql);
        users = run.users;
        console.log(`round ${round + 1}: count(*) ${count.ms.toFixed(1)} ms; bulk scoring, ${limit} a page (${run.pages} pages, ${run.users} users) ${run.ms.toFixed(0)} ms, of which SQL alone ${sql.toFixed(0)} ms`);
      }
    }
    const countMs = median(counts);
    const lines = PAGE_SIZES.map((limit) => {
      const ms = median(bulk.get(limit)!);
      return `| ${limit} | ${users.toLocaleString('en-US')} | ${rows.toLocaleString('en-US')} | ${ms.toFixed(0)} | ${median(sqlOnly.get(limit)!).toFixed(0)} | ${countMs.toFixed(1)} | ${(ms / countMs).toFixed(0)}× | ${((ms * 1000) / users).toFixed(0)} µs |`;
    });
    const table = ['| page size | users | rows | bulk scoring ms (median) | of which SQL alone ms | `select count(*)` ms (median) | ratio | per user |', '|---|---|---|---|---|---|---|---|', ...lines].join('\n');
    console.log(`\n${table}`);
    if (process.env.AS_NO_RESULTS === '1') return;
    const commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    const stamp = new Date().toISOString().slice(0, 16).replace('T', ' ');
    appendFileSync(join(__dirname, '../RESULTS.md'), [
      '', `## ${stamp} UTC — automation score, bulk scoring against one count(*) (\`npm run bench:automation-score\`)`, '',
      `- Machine: nproc ${cpus().length}; Node ${process.version}; commit ${commit}; PostgreSQL of the dev stack, scratch database, after \`vacuum analyze\`; load average ${load.toFixed(1)} at the start (other sessions share the machine).`,
      `- ${USERS.toLocaleString('en-US')} users × ${ROWS_PER_USER} rows over 27 days; the default 30-day window; ${ROUNDS} alternating rounds, medians. Bulk scoring = every page of the route's query (aggregates in SQL) and the TypeScript finish, as \`GET /admin/users/automation-scores\` pages; count(*) = one plain \`select count(*) from api_logs\` over the same rows.`,
      '', table, '',
    ].join('\n'));
    console.log('appended a section to bench/RESULTS.md');
  } finally {
    await t.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
