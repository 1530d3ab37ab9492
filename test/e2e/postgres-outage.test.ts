/**
 * PostgreSQL killed (SIGKILL of the postmaster and every backend) for {@link OUTAGE_MS} under a
 * load of chat completions, then started again on the same data directory (crash recovery):
 * the gateway keeps answering every inference request with an API key issued before the outage
 * (keys are served from its in-memory cache), the control-plane API and the gateway's own
 * database routes answer 503 with a clear message (not a 500, not a hang), and once the server
 * is back every answered request has exactly one request-log row (rows spooled meanwhile).
 * A private cluster (never the shared dev server), a fake upstream, all on 127.0.0.1.
 *
 * The outage lasts 30 s as operators would meet it; nothing depends on its length beyond "longer
 * than the request log's write timeout", so `OUTAGE_TEST_SECONDS` may shorten it for a quick run.
 */
import assert from 'node:assert/strict';
import { createDb, type Db } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { ADMIN_TOKEN } from '../support/admin';
import { makeOwner } from '../support/agent-stack';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../support/api';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { captureLogs } from '../support/logs';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';
import { waitFor } from '../support/wait';

const OUTAGE_MS = Number(process.env.OUTAGE_TEST_SECONDS ?? 30) * 1000;
const CONCURRENCY = 8;
/** Every client call is bounded like a patient client's: a hang fails the test instead of holding it. */
const CLIENT_TIMEOUT_MS = 10_000;

describe('e2e: PostgreSQL killed for a while under load', function () {
  this.timeout(OUTAGE_MS + 180_000);
  let pg: PrivatePostgres | undefined;
  let db: Db | undefined;
  let upstream: FakeUpstream | undefined;
  let gw: TestGateway | undefined;
  let api: TestApi | undefined;
  let key = '';

  before(async () => {
    pg = await startPrivatePostgres();
    db = createDb({ url: pg.url, poolMax: 6, applicationName: 'postgres-outage-test', log: captureLogs('outage-pool', 'warn').log });
    await migrateLatest(db);
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db,
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}", provider: local }`])}`,
      env: {
        USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false',
        // A short write timeout, so rows of the outage go through the spool well within it.
        REQUEST_LOG_FLUSH_INTERVAL_MS: '50', REQUEST_LOG_BATCH_SIZE: '50', REQUEST_LOG_WRITE_TIMEOUT_MS: '500',
      },
    });
    api = await startTestApi({ db });
    key = await makeOwner(gw.url, { db, url: pg.url, drop: () => Promise.resolve() } as never, 'outage-owner@example.com');
  });

  after(async () => {
    try {
      await closeAll(api, gw, upstream);
      await db?.destroy();
    } finally {
      pg?.stop();
    }
  });

  async function call(url: string, init: RequestInit = {}): Promise<{ status: number; message: string }> {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    const text = await res.text();
    let message = '';
    try {
      message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? '';
    } catch {
      // not JSON: the status alone is asserted
    }
    return { status: res.status, message };
  }

  const chat = (id: string, bearer = key) => call(`${gw!.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, 'x-request-id': id },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${id}` }] }),
  });

  async function count(sql: string): Promise<number> {
    return Number((await db!.raw<{ rows: Array<{ n: string }> }>(sql)).rows[0]?.n);
  }

  it('keeps serving inference, answers 503 on database routes, and stores every answered request once after the server returns', async () => {
    const answered: string[] = [];
    const failures: string[] = [];
    let phase: 'before' | 'outage' | 'after' = 'before';
    let stop = false;
    let next = 0;
    const perPhase = { before: 0, outage: 0, after: 0 };
    const load = Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (!stop) {
        const id = `load-${next++}`;
        const seen = phase;
        const reply = await chat(id).catch((err: Error) => ({ status: 0, message: err.message }));
        if (reply.status === 200) {
          answered.push(id);
          perPhase[seen] += 1;
        } else failures.push(`${id} (${seen}): ${reply.status} ${reply.message}`);
      }
    }));
    try {
      await waitFor(() => perPhase.before >= 200, '200 answers before the outage', 30_000);
      const killed = pg!.kill9();
      assert.ok(killed.length > 1, 'the postmaster and its backends were killed');
      phase = 'outage';
      const outageEnds = Date.now() + OUTAGE_MS;

      // The control-plane API reads the caller and their chats from PostgreSQL: 503, said plainly.
      const jobs = await call(`${api!.url}/v1/agent/jobs`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(jobs.status, 503, jobs.message);
      assert.match(jobs.message, /^The database is not answering right now; the request was not completed\. Try again shortly$/);
      // The gateway's own database routes (the admin API's account list) likewise.
      const keys = await call(`${gw!.url}/admin/users`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      assert.equal(keys.status, 503, keys.message);
      assert.match(keys.message, /^The database is not answering/);
      // A key the cache does not hold is refused as unknown (the cache holds every valid key): 401, not a 5xx.
      const stranger = await chat('stranger', `gk_${'x'.repeat(43)}`);
      assert.equal(stranger.status, 401, stranger.message);
      const health = await fetch(`${gw!.url}/health`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
      assert.equal(health.status, 200);
      assert.equal(((await health.json()) as { status: string }).status, 'degraded');

      await waitFor(() => Date.now() >= outageEnds && perPhase.outage >= 100, 'the outage lasted its time, under load', OUTAGE_MS + 30_000);
      pg!.restart();
      phase = 'after';
      await waitFor(() => perPhase.after >= 100, '100 answers after the restart', 30_000);
      const back = await call(`${api!.url}/v1/agent/jobs`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(back.status, 200, `the API answers again once the server is back: ${back.message}`);
    } finally {
      stop = true;
      pg!.resume();
      await load;
    }
    assert.deepEqual(failures, [], 'every inference request was answered 200, during the outage too');

    await waitFor(async () => (await count('select count(*) as n from api_logs')) >= answered.length, `${answered.length} request-log rows`, 120_000);
    const rows = await db!('api_logs').whereIn('request_id', answered).select('request_id').count<Array<{ request_id: string; n: string }>>('* as n').groupBy('request_id');
    assert.equal(rows.length, answered.length, 'every answered request has its row');
    assert.deepEqual(rows.filter((r) => Number(r.n) !== 1), [], 'no request has two rows');
    const writer = gw!.deps.requestLog!.writer;
    assert.ok(writer.counters.spilled > 0, 'rows of the outage went through the spool');
    assert.equal(writer.counters.dropped, 0);
  });
});
