/**
 * Public stats against real PostgreSQL rows (docs/public-stats.md): the snapshot's figures, items
 * about 2 accounts withheld and about 3 published, the language section only with stored message
 * text, the 30 newest snapshots kept, the CLI (`--dry-run`, `--weeks`, bad flags exit 2), and
 * `GET /public-stats` on a real gateway: 404 unless the active manifest sets the flag, 404 before
 * the first snapshot, then the newest snapshot.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { windowOf, type PublicStatsContent } from '../../../../gateway/ops/public-stats/content';
import { buildPublicStats, SNAPSHOTS_KEPT, storePublicStats, takePublicStatsSnapshot } from '../../../../gateway/ops/public-stats/snapshot';
import { createDb } from '../../../../lib/db';
import { freeLoopbackPort } from '../../../../ops/dev/free-port';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { startFakeUpstream } from '../../../support/fake-upstream';
import { startTestGateway } from '../../../support/gateway';
import { captureLogs } from '../../../support/logs';
import { waitFor } from '../../../support/wait';

const NOW = new Date();
const LAST_WEEK = new Date(windowOf(NOW, 26).end.getTime() - 3 * 86_400_000);
const SCRIPT = join(__dirname, '../../../../ops/analytics/public-stats.ts');

interface LogRow { user_id: number | null; model: string; text?: string; surface?: string; status?: number; synthetic?: boolean; at?: Date }

async function addUsers(t: TestDatabase, count: number): Promise<number[]> {
  const rows = Array.from({ length: count }, (_, i) => ({ email: `user${i}-${Math.random().toString(36).slice(2)}@example.com` }));
  return (await t.db('users').insert(rows).returning<Array<{ id: string }>>('id')).map((r) => Number(r.id));
}

async function addLogs(t: TestDatabase, rows: LogRow[]): Promise<void> {
  await t.db('api_logs').insert(rows.map((r, i) => ({
    request_id: `r${i}`, created_at: r.at ?? LAST_WEEK, user_id: r.user_id, model: r.model, surface: r.surface ?? 'chat', status: r.status ?? 200,
    synthetic: r.synthetic ?? false, prompt_tokens: 10, completion_tokens: 5, user_message_text: r.text ?? null,
  })));
}

function runCli(t: TestDatabase, args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { env: { ...process.env, DATABASE_URL: t.url, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('public stats snapshot (PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let users: number[];

  before(async () => {
    t = await freshDatabase();
    users = await addUsers(t, 5);
    const [a, b, c, d, e] = users as [number, number, number, number, number];
    await addLogs(t, [
      { user_id: a, model: 'shared-model', text: 'Hello there, how are you today?' },
      { user_id: b, model: 'shared-model', text: 'Please summarise this paragraph.' },
      { user_id: c, model: 'shared-model', text: 'Write a haiku about autumn', surface: 'responses' },
      { user_id: d, model: 'pair-model', text: 'Привет, как дела?' },
      { user_id: e, model: 'pair-model', text: 'Напиши стихотворение' },
      { user_id: null, model: 'shared-model' },
      // Not counted: a failed request, a synthetic probe, a request before the window.
      { user_id: a, model: 'failed-model', status: 502 },
      { user_id: b, model: 'probe-model', synthetic: true },
      { user_id: c, model: 'shared-model', at: new Date(windowOf(NOW, 26).start.getTime() - 86_400_000) },
    ]);
  });
  after(async () => {
    await t?.drop();
  });

  it('publishes items of 3 or more accounts, withholds those of 2, and counts only successful, real requests', async () => {
    const stats = await buildPublicStats(t.db, { weeks: 26, languages: false, now: NOW });
    assert.equal(stats.window.weeks, 26);
    assert.deepEqual(stats.totals, { requests: 6, accounts: 5, prompt_tokens: 60, completion_tokens: 30 });
    assert.deepEqual(stats.models, { items: [{ model: 'shared-model', requests: 4, accounts: 3, prompt_tokens: 40, completion_tokens: 20 }], withheld: 1 });
    assert.deepEqual(stats.surfaces.items.map((s) => [s.surface, s.accounts]), [['chat', 4]]);
    assert.equal(stats.surfaces.withheld, 1, 'responses: one account');
    assert.deepEqual(stats.accounts, { registered: 5, new_in_window: null }, 'accounts created now are not in the window');
    assert.equal(stats.weeks.length, 26);
    const lastMonday = new Date(windowOf(NOW, 26).end.getTime() - 7 * 86_400_000).toISOString().slice(0, 10);
    assert.deepEqual(stats.weeks.at(-1), { week_start: lastMonday, withheld: false, requests: 6, accounts: 5, prompt_tokens: 60, completion_tokens: 30 });
    assert.ok(stats.weeks.slice(0, -1).every((w) => w.withheld), 'weeks without 3 active accounts are withheld');
    assert.equal('languages' in stats, false, 'no language section without DB_STORE_FULL_CONTENT');
  });

  it('publishes an item once a third account uses it', async () => {
    await addLogs(t, [{ user_id: users[0]!, model: 'pair-model' }]);
    const stats = await buildPublicStats(t.db, { weeks: 26, languages: false, now: NOW });
    assert.deepEqual(stats.models.items.map((m) => [m.model, m.accounts]).sort(), [['pair-model', 3], ['shared-model', 3]]);
    assert.equal(stats.models.withheld, 0);
    await t.db('api_logs').where({ model: 'pair-model', user_id: users[0]! }).delete();
  });

  it('adds the language section with stored message text: latin (3 accounts) published, cyrillic (2) withheld', async () => {
    const stats = await buildPublicStats(t.db, { weeks: 26, languages: true, now: NOW });
    assert.deepEqual(stats.languages, { items: [{ script: 'latin', requests: 3, accounts: 3, prompt_tokens: 30, completion_tokens: 15 }], withheld: 1 });
  });

  it('withholds the totals of a window with fewer than 3 accounts', async () => {
    const stats = await buildPublicStats(t.db, { weeks: 1, languages: false, now: new Date(NOW.getTime() + 70 * 86_400_000) });
    assert.equal(stats.totals, null);
    assert.deepEqual(stats.models, { items: [], withheld: 0 });
  });

  it('keeps the 30 newest snapshots', async () => {
    const content = await buildPublicStats(t.db, { weeks: 26, languages: false, now: NOW });
    const ids: number[] = [];
    for (let i = 0; i < SNAPSHOTS_KEPT + 2; i += 1) ids.push(await storePublicStats(t.db, content));
    const kept = (await t.db('public_stats_snapshots').orderBy('id').pluck<string[]>('id')).map(Number);
    assert.deepEqual(kept, ids.slice(2));
    await t.db('public_stats_snapshots').delete();
  });

  it('CLI: --dry-run prints the JSON and writes nothing; bad flags exit 2; a run stores one snapshot', async () => {
    const dry = runCli(t, ['--dry-run', '--weeks', '4'], { DB_STORE_FULL_CONTENT: 'true' });
    assert.equal(dry.status, 0, dry.stderr);
    const printed = JSON.parse(dry.stdout) as PublicStatsContent;
    assert.equal(printed.window.weeks, 4);
    assert.equal(printed.totals?.requests, 6);
    assert.ok(printed.languages, 'DB_STORE_FULL_CONTENT=true adds the language section');
    assert.equal((await t.db('public_stats_snapshots').count<Array<{ count: string }>>('* as count'))[0]!.count, '0');
    for (const bad of [['--weeks', '0'], ['--weeks', 'ten'], ['--weeks', '521'], ['--bogus'], ['--weeks']]) {
      const res = runCli(t, bad);
      assert.equal(res.status, 2, `${bad.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, /usage: npm run public-stats/);
    }
    const run = runCli(t, []);
    assert.equal(run.status, 0, run.stderr);
    const rows = await t.db('public_stats_snapshots').select<Array<{ window_weeks: number; content: PublicStatsContent }>>('window_weeks', 'content');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.window_weeks, 26);
    assert.equal('languages' in rows[0]!.content, false);
    await t.db('public_stats_snapshots').delete();
  });

  it('GET /public-stats: 404 unless the active manifest sets the flag, 404 before a snapshot, then the newest snapshot', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'public-stats-'));
    const manifest = (flag: string) => {
      const path = join(dir, `manifest-${flag}.yaml`);
      writeFileSync(path, `schema_version: 1\n${flag === 'absent' ? '' : `features: { public_stats: ${flag} }\n`}`);
      return path;
    };
    const get = async (env: Record<string, string>) => {
      const gw = await startTestGateway({ db: t.db, env });
      try {
        const route = gw.routes.find((r) => r.path === '/public-stats');
        assert.deepEqual([route?.methods, route?.access], [['GET'], 'public']);
        const res = await fetch(`${gw.url}/public-stats`);
        return { status: res.status, body: (await res.json()) as PublicStatsContent & { error?: { message: string } }, cache: res.headers.get('cache-control') };
      } finally {
        await gw.close();
      }
    };
    const active = (path: string) => ({ DISTRIBUTION_CONFIG_PATH: path, DISTRIBUTION_CONFIG_MODE: 'active' });
    await takePublicStatsSnapshot(t.db, { weeks: 2, languages: false, now: NOW });
    for (const env of [{}, active(manifest('false')), active(manifest('absent')), { DISTRIBUTION_CONFIG_PATH: manifest('true'), DISTRIBUTION_CONFIG_MODE: 'dark' }]) {
      const res = await get(env);
      assert.equal(res.status, 404, JSON.stringify(env));
      assert.match(res.body.error!.message, /features\.public_stats/);
    }
    await t.db('public_stats_snapshots').delete();
    const none = await get(active(manifest('true')));
    assert.equal(none.status, 404);
    assert.match(none.body.error!.message, /No public stats snapshot yet/);
    await takePublicStatsSnapshot(t.db, { weeks: 2, languages: false, now: NOW });
    const newest = await takePublicStatsSnapshot(t.db, { weeks: 26, languages: false, now: NOW });
    const ok = await get(active(manifest('true')));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, newest.content);
    assert.equal(ok.cache, 'public, max-age=60');
  });

  it('GET /public-stats answers 503 when PostgreSQL cannot be reached', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'public-stats-down-'));
    writeFileSync(join(dir, 'manifest.yaml'), 'schema_version: 1\nfeatures: { public_stats: true }\n');
    // A pool on a port where nothing listens: every query fails with a refused connection.
    const down = createDb({ url: `postgres://gw@127.0.0.1:${await freeLoopbackPort()}/none`, poolMax: 1, acquireTimeoutMs: 2000, log: captureLogs('down-db', 'fatal').log });
    const gw = await startTestGateway({ db: down, env: { DISTRIBUTION_CONFIG_PATH: join(dir, 'manifest.yaml'), DISTRIBUTION_CONFIG_MODE: 'active' } });
    try {
      const res = await fetch(`${gw.url}/public-stats`);
      assert.equal(res.status, 503);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /cannot be read right now/);
    } finally {
      await gw.close();
      await down.destroy();
    }
  });

  it('the gateway stores the newest user message\'s text in api_logs only with DB_STORE_FULL_CONTENT=true', async () => {
    const upstream = await startFakeUpstream();
    try {
      for (const [flag, expected] of [['true', 'Bonjour, comment ça va ?'], ['false', null]] as const) {
        const gw = await startTestGateway({
          db: t.db, env: { DB_STORE_FULL_CONTENT: flag, REQUEST_LOG_FLUSH_INTERVAL_MS: '20' },
          modelsYaml: `models:\n  - { id: text-model, name: T, provider: generic_compat, base_url: "${upstream.url}" }\n`,
        });
        try {
          const requestId = `text-${flag}`;
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': requestId },
            body: JSON.stringify({ model: 'text-model', messages: [{ role: 'user', content: 'first' }, { role: 'user', content: '  Bonjour, comment ça va ?  ' }] }),
          });
          assert.equal(res.status, 200);
          const row = await waitFor(() => t.db('api_logs').where({ request_id: requestId }).first<{ user_message_text: string | null } | undefined>(), `row ${requestId}`);
          assert.equal(row.user_message_text, expected);
        } finally {
          await gw.close();
        }
      }
    } finally {
      await upstream.close();
    }
  });
});
