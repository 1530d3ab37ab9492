/**
 * The automation score end to end: reference users inserted as real `api_logs` rows into
 * PostgreSQL (test/support/automation-score-users.ts), scored through the admin routes and the
 * operator CLI; validation (400 naming the parameter), 404 for an unknown user, paging, the
 * window, and access: administrators only (401 without or with a wrong credential, 403 for a
 * user's API key or account token, 500 `Database not configured` without a database).
 *
 * Expected values, worked by hand from docs/automation-score.md (weights: turn_pattern 0.24,
 * prompt_size_dispersion 0.17, user_message_shape 0.15, client_tool_prior 0.16,
 * daily_activity_shape 0.27, tool_call_human_tell 0.08, agent_opener_override 0.08; quartiles by
 * linear interpolation at positions q·(n-1); log2(24) = 4.584963):
 *
 * BOT (96 rows, every 15 min over one day): turn_pattern 96/96 one-shot, p90 1 → 1. Prompt tokens
 *   all 500 → rcv 0 → 1. user_message_shape: sizes all 120 → 1 (w 0.40); entropy 3.25 → 1 - 3.25/4
 *   = 0.1875 (w 0.25); one hash in 96 → ratio 0.0104 → 1 (w 0.35): 0.4 + 0.046875 + 0.35 = 0.796875.
 *   client_tool_prior: python-requests 0.85, no agent → 0.85. daily: 24/24 hours → 1; Hnorm 1 → 1;
 *   quiet 0 h → 1; gaps all 900 s → rcv 0 → 1: 1. No tool calls, no agent: those two dropped.
 *   raw = (0.24 + 0.17 + 0.15·0.796875 + 0.16·0.85 + 0.27) / 0.99 = 0.93553125 / 0.99 = 0.944981;
 *   alpha = 96/126 = 0.761905; score = 0.761905·0.944981 + 0.238095·0.5 = 0.839033 → 0.8390
 *   scripted_batch; confidence 0.761905·0.99/1.15 = 0.655901 → 0.6559.
 * HUMAN (60 rows, 10 days × 09,10,11,13,15,16 h, turns 1,2,3 twice a day): one-shot 20/60, p90 of
 *   20×1, 20×2, 20×3 at position 53.1 → 3 → depth 0.5: 1/3·0.5 = 0.166667. Prompt tokens 200/800/2000
 *   (20 each): p25 200, p50 800, p75 2000 → rcv 2.25 → 0. Message chars 40/150/600 → rcv 3.73 → 0;
 *   entropy 4.25 → 0; 60 distinct hashes → 0: user_message_shape 0. Browser → 0.10. daily:
 *   coverage 6/24 → 0; Hnorm log2(6)/log2(24) = 0.563798 → 0.151884; quiet 17..08 h = 16 h → 0;
 *   gaps 30×3600, 20×7200, 9×61200 s: p25 3600 (position 14.5), p50 3600 (29), p75 7200 (43.5)
 *   → rcv 1 → 0: daily = 0.2·0.151884 = 0.030377. raw = (0.04 + 0 + 0 + 0.016 + 0.27·0.030377)
 *   / 0.99 = 0.064850; alpha 60/90; score = 0.666667·0.064850 + 0.166667 = 0.209900 → 0.2099
 *   likely_human; confidence 0.666667·0.99/1.15 = 0.5739. Five older rows (45 days) count only
 *   with days=90 (N 65).
 * CODING_AGENT (40 rows, 4 days × one 10-turn session at 10..19 h, all from claude-cli with
 *   metadata.agent): one-shot 4/40, p90 of turns 1..10 (4 each) at 35.1 → 9.1 ≥ 3 → 0.1·0.5 = 0.05.
 *   Prompt tokens 1000·k: p25 3000, p50 5500, p75 8000 → rcv 0.909 → 0. Messages: chars 100..400 per
 *   day: p25 175, p50 250, p75 325 → rcv 0.6 → 0; entropy 4.5 → 0; 4 hashes in 40 → ratio 0.1 →
 *   1.8 → 1: user_message_shape 0.35·1 / 1.0 = 0.35. client_tool_prior: 0.10·(1 - 0.85·1) = 0.015.
 *   daily: coverage 10/24 → 0; Hnorm log2(10)/log2(24) = 0.724528 → 0.534591; quiet 20..09 h = 14 h
 *   → 0; gaps 36×3600 + 3×54000 → quartiles 3600 → rcv 0 → 1: (0.2·0.534591 + 0.3·1)/1.0 = 0.406918.
 *   tool_call_human_tell: 36/40 with tool calls → clamp01(0.5 - 0.9) = 0. agent_opener_override:
 *   clamp01(0.15 - 1) = 0. raw = (0.012 + 0 + 0.0525 + 0.0024 + 0.109868 + 0 + 0) / 1.15 = 0.153711;
 *   the human clamp holds (agent share 1 ≥ 0.3, rest-gap part 0 < 0.5) and leaves it (below 0.5).
 *   alpha 40/70: score = 0.571429·0.153711 + 0.214286 = 0.302121 → 0.3021 likely_human; confidence
 *   0.571429·1.15/1.15 = 0.5714.
 * MIXED (40 rows over 2 days: a python-requests job every 30 min 00:00–04:30, and two 5-turn browser
 *   chats hourly 09..18 h): one-shot 24/40 = 0.6, p90 of 24×1, 4×2..5 at 35.1 → 4.1 → 0.5: 0.3.
 *   Prompt tokens (20×700, 4 each of 300·k): p25 700, p50 700, p75 900 → rcv 0.285714 → 0.428571.
 *   Messages: chars (20×80, 4 each of 50·k): p25 80, p50 80, p75 150 → rcv 0.875 → 0; mean entropy
 *   (20·3 + 20·4)/40 = 3.5 → 0.125; 21 hashes in 40 → (1 - 0.525)/0.5 = 0.95: 0.25·0.125 + 0.35·0.95
 *   = 0.36375. UA: (20·0.85 + 20·0.10)/40 = 0.475. daily: 15 hours → (0.625 - 0.5)/0.5 = 0.25;
 *   H = 5·0.1·log2(10) + 10·0.05·log2(20) = 3.821928, Hnorm 0.833579 → 0.794236; quiet 19..23 h = 5 h
 *   → 1/6; gaps 18×1800, 18×3600, 2×16200, 21600: p25 1800, p50 3600, p75 3600 → rcv 0.5 → 0.5:
 *   0.05 + 0.158847 + 0.05 + 0.15 = 0.408847. raw = (0.072 + 0.072857 + 0.054563 + 0.076 + 0.110389)
 *   / 0.99 = 0.389705; alpha 40/70: score 0.571429·0.389705 + 0.214286 = 0.436975 → 0.4370
 *   mixed_or_uncertain.
 * FEW (3 curl rows): only client_tool_prior (0.85); alpha 3/33: 0.85/11 + 0.5·10/11 = 0.531818 →
 *   0.5318 mixed_or_uncertain, insufficient_data.
 * IDLE (an account without rows): N 0, score 0.5, raw null, confidence 0, insufficient_data.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { AutomationScore } from '../../../../gateway/ops/automation-score';
import { createKey, signUpAndLogIn } from '../../../support/accounts';
import { ADMIN_TOKEN, admin, assertInvalid, assertNoDatabase, type AdminResponse } from '../../../support/admin';
import { BOT, CODING_AGENT, FEW, HUMAN, IDLE, MIXED, referenceRows } from '../../../support/automation-score-users';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { startTestGateway, type TestGateway } from '../../../support/gateway';

const EXPECTED: Array<{ user: number; score: number; band: string; insufficient: boolean; clamp: boolean; n: number }> = [
  { user: BOT, score: 0.839, band: 'scripted_batch', insufficient: false, clamp: false, n: 96 },
  { user: HUMAN, score: 0.2099, band: 'likely_human', insufficient: false, clamp: false, n: 60 },
  { user: CODING_AGENT, score: 0.3021, band: 'likely_human', insufficient: false, clamp: true, n: 40 },
  { user: MIXED, score: 0.437, band: 'mixed_or_uncertain', insufficient: false, clamp: false, n: 40 },
  { user: FEW, score: 0.5318, band: 'mixed_or_uncertain', insufficient: true, clamp: false, n: 3 },
];

const SCRIPT = join(__dirname, '../../../../ops/admin/automation-score.ts');

function cli(url: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Page {
  window_days: number;
  data: AutomationScore[];
  next_cursor: string | null;
}

describe('automation score: admin routes and CLI over reference users', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    await t.db('users').insert([BOT, HUMAN, CODING_AGENT, MIXED, FEW, IDLE].map((id) => ({ id, email: `u${id}@example.com`, role: 'free' })));
    const day0 = new Date();
    day0.setUTCHours(0, 0, 0, 0);
    await t.db.batchInsert('api_logs', referenceRows(day0.getTime() - 12 * 86_400_000), 200);
    gw = await startTestGateway({ db: t.db, env: { ADMIN_TOKEN, USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' } });
  });
  after(async () => {
    await gw?.close();
    await t?.drop();
  });

  it('scores each reference user as derived by hand, through GET /admin/users/{id}/automation-score', async () => {
    for (const e of EXPECTED) {
      const res = await admin<AutomationScore>(gw, 'GET', `/admin/users/${e.user}/automation-score`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const s = res.body;
      assert.deepEqual([s.user_id, s.score, s.band, s.insufficient_data, s.human_clamp, s.n_requests, s.window_days],
        [e.user, e.score, e.band, e.insufficient, e.clamp, e.n, 30], `user ${e.user}`);
    }
    const bot = (await admin<AutomationScore>(gw, 'GET', `/admin/users/${BOT}/automation-score`)).body;
    assert.equal(bot.confidence, 0.6559);
    assert.deepEqual([bot.signals.tool_call_human_tell.available, bot.signals.tool_call_human_tell.sub_score], [false, null]);
    assert.equal(bot.signals.user_message_shape.sub_score, 0.7969);
    const human = (await admin<AutomationScore>(gw, 'GET', `/admin/users/${HUMAN}/automation-score`)).body;
    assert.equal(human.confidence, 0.5739);
    assert.equal(human.signals.daily_activity_shape.parts!.interarrival_regularity!.sub_score, 0);
    assert.deepEqual(human.signals.turn_pattern.inputs.p90_user_turns, 3);
    const agent = (await admin<AutomationScore>(gw, 'GET', `/admin/users/${CODING_AGENT}/automation-score`)).body;
    assert.deepEqual([agent.raw, agent.confidence, agent.signals.agent_opener_override.sub_score, agent.signals.client_tool_prior.sub_score], [0.1537, 0.5714, 0, 0.015]);
    const idle = (await admin<AutomationScore>(gw, 'GET', `/admin/users/${IDLE}/automation-score`)).body;
    assert.deepEqual([idle.n_requests, idle.score, idle.raw, idle.confidence, idle.insufficient_data], [0, 0.5, null, 0, true]);
  });

  it('counts only the window: the human\'s five 45-day-old rows count with days=90', async () => {
    const wide = await admin<AutomationScore>(gw, 'GET', `/admin/users/${HUMAN}/automation-score?days=90`);
    assert.deepEqual([wide.body.n_requests, wide.body.window_days], [65, 90]);
    const narrow = await admin<AutomationScore>(gw, 'GET', `/admin/users/${BOT}/automation-score?days=1`);
    assert.equal(narrow.body.n_requests, 0, 'the bot ran 12 days ago');
  });

  it('lists users by id a page at a time, with min_requests', async () => {
    const seen: Array<[number, number, string]> = [];
    let cursor: string | null = '0';
    const cursors: Array<string | null> = [];
    while (cursor !== null) {
      const res: AdminResponse<Page> = await admin<Page>(gw, 'GET', `/admin/users/automation-scores?limit=2&cursor=${cursor}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      seen.push(...res.body.data.map((s): [number, number, string] => [s.user_id, s.score, s.band]));
      cursor = res.body.next_cursor;
      cursors.push(cursor);
    }
    assert.deepEqual(seen, EXPECTED.map((e): [number, number, string] => [e.user, e.score, e.band]));
    assert.deepEqual(cursors, [String(HUMAN), String(MIXED), null]);
    const busy = await admin<Page>(gw, 'GET', '/admin/users/automation-scores?min_requests=41');
    assert.deepEqual(busy.body.data.map((s) => s.user_id), [BOT, HUMAN]);
    assert.equal((await admin<Page>(gw, 'GET', '/admin/users/automation-scores?min_requests=5')).body.data.length, 4);
  });

  it('answers 400 naming the parameter, 404 for an unknown user', async () => {
    for (const [query, field] of [['days=0', 'days'], ['days=91', 'days'], ['days=abc', 'days'], ['days=1.5', 'days']] as const) {
      assertInvalid(await admin(gw, 'GET', `/admin/users/${BOT}/automation-score?${query}`), field);
      assertInvalid(await admin(gw, 'GET', `/admin/users/automation-scores?${query}`), field);
    }
    for (const [query, field] of [['limit=0', 'limit'], ['limit=501', 'limit'], ['cursor=-1', 'cursor'], ['min_requests=0', 'min_requests'], ['bogus=1', 'bogus']] as const) {
      assertInvalid(await admin(gw, 'GET', `/admin/users/automation-scores?${query}`), field);
    }
    assertInvalid(await admin(gw, 'GET', '/admin/users/abc/automation-score'), 'user_id');
    assertInvalid(await admin(gw, 'GET', '/admin/users/0/automation-score'), 'user_id');
    const unknown = await admin(gw, 'GET', '/admin/users/999/automation-score');
    assert.equal(unknown.status, 404);
  });

  it('is never reachable by a user: 401 without or with a wrong credential, 403 with their key or account token', async () => {
    const session = await signUpAndLogIn(gw.url, t.db, 'someone@example.com');
    const key = await createKey(gw.url, session);
    const own = (await t.db('users').where({ email: 'someone@example.com' }).first<{ id: string }>()).id;
    for (const path of [`/admin/users/${own}/automation-score`, '/admin/users/automation-scores']) {
      assert.equal((await admin(gw, 'GET', path, undefined, null)).status, 401, path);
      assert.equal((await admin(gw, 'GET', path, undefined, 'wrong-token')).status, 401, path);
      assert.equal((await admin(gw, 'GET', path, undefined, key)).status, 403, `${path} with the user's API key`);
      assert.equal((await admin(gw, 'GET', path, undefined, session.accessToken)).status, 403, `${path} with the user's access token`);
    }
    assert.equal(gw.routes.filter((r) => r.path.includes('automation-score')).every((r) => r.access === 'admin'), true);
  });

  it('answers 500 Database not configured without a database', async () => {
    const noDb = await startTestGateway({ env: { ADMIN_TOKEN } });
    try {
      await assertNoDatabase(noDb, [{ method: 'GET', path: `/admin/users/${BOT}/automation-score` }, { method: 'GET', path: '/admin/users/automation-scores' }]);
    } finally {
      await noDb.close();
    }
  });

  it('the CLI prints the same scores, highest first, as a table or JSON; bad flags exit 2 with usage', () => {
    const table = cli(t.url, []);
    assert.equal(table.status, 0, table.stderr);
    const lines = table.stdout.trim().split('\n').filter((l) => /^\d/.test(l));
    const byScore = [...EXPECTED].sort((a, b) => b.score - a.score);
    assert.deepEqual(lines.map((l) => l.split(/\s+/).slice(0, 3)), byScore.map((e) => [String(e.user), e.score.toFixed(4), e.band]));
    assert.match(lines.find((l) => l.startsWith(String(FEW)))!, /insufficient_data/);
    assert.match(lines.find((l) => l.startsWith(String(CODING_AGENT)))!, /human_clamp/);

    const one = cli(t.url, ['--user', String(MIXED), '--json', '--days', '30']);
    assert.equal(one.status, 0, one.stderr);
    const parsed = JSON.parse(one.stdout) as AutomationScore;
    assert.deepEqual([parsed.user_id, parsed.score, parsed.band], [MIXED, 0.437, 'mixed_or_uncertain']);
    const filtered = JSON.parse(cli(t.url, ['--min-requests', '41', '--json']).stdout) as { data: AutomationScore[] };
    assert.deepEqual(filtered.data.map((s) => s.user_id), [BOT, HUMAN]);

    for (const args of [['--days', '0'], ['--days', '91'], ['--min-requests', 'x'], ['--bogus'], ['--user', '-3'], ['extra']]) {
      const bad = cli(t.url, args);
      assert.equal(bad.status, 2, args.join(' '));
      assert.match(bad.stderr, /usage: npm run automation-score/);
    }
    const unknown = cli(t.url, ['--user', '999']);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no user 999/);
  });
});
