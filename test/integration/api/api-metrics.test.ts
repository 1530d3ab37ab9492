/**
 * The control-plane API's `GET /metrics` (docs/metrics.md) on a real API over PostgreSQL:
 * gauges counted from real rows (hosts, jobs, turns, attempts), request counts per route
 * pattern (never the raw path), access by METRICS_TOKEN or an operator credential (401
 * otherwise), and a scrape that still answers, with the last values, once PostgreSQL is gone.
 */
import assert from 'node:assert/strict';
import parsePrometheus from 'parse-prometheus-text-format';
import { apiMetricsOf } from '../../../api/process-services';
import { createDb, type Db } from '../../../lib/db';
import { ADMIN_TOKEN } from '../../support/admin';
import { insertHost, insertJobWithTurn, insertOwner, insertRunningAttempt } from '../../support/agent-rows';
import { startTestApi, type TestApi } from '../../support/api';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { waitFor } from '../../support/wait';

const METRICS_TOKEN = 'metrics-token-for-the-scraper';

async function scrape(base: string, authorization?: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${base}/metrics`, { headers: authorization ? { authorization } : {} });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The value of `name` with exactly `labels` (undefined when absent). */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = parsePrometheus(text).find((f) => f.name === name);
  const sample = family?.metrics.find((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === JSON.stringify(Object.entries(labels).sort()));
  return sample?.value === undefined ? undefined : Number(sample.value);
}

async function seed(db: Db): Promise<void> {
  await insertHost(db, 'host-a', { slotsTotal: 4 });
  await insertHost(db, 'host-b', { slotsTotal: 6, slotsSaved: 2 });
  const owner = await insertOwner(db, 'metrics-owner@example.com');
  const running = await insertJobWithTurn(db, owner, 'host-a');
  await db('agent_turns').where({ turn_id: running.turnId }).update({ state: 'running' });
  await insertRunningAttempt(db, { ...running, hostId: 'host-a' });
  await insertJobWithTurn(db, owner);
  await insertJobWithTurn(db, owner);
}

describe('control-plane API metrics (GET /metrics, PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;

  before(async () => {
    t = await freshDatabase();
    await seed(t.db);
    api = await startTestApi({ db: t.db, env: { METRICS_TOKEN } });
    await apiMetricsOf(api.deps).start(t.db, { defaultSlots: 3, log: api.deps.log, everyMs: 60_000 });
  });
  after(async () => {
    api?.deps.metrics?.stop();
    await api?.close();
    await t?.drop();
  });

  it('answers 401 without a credential or with a wrong one, and serves METRICS_TOKEN and the admin token', async () => {
    assert.equal((await scrape(api.url)).status, 401);
    assert.equal((await scrape(api.url, 'Bearer not-the-metrics-token')).status, 401);
    assert.equal((await scrape(api.url, `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}`)).status, 401);
    const ok = await scrape(api.url, `Bearer ${METRICS_TOKEN}`);
    assert.equal(ok.status, 200);
    assert.match(ok.type ?? '', /^text\/plain; version=0\.0\.4/);
    assert.equal((await scrape(api.url, `Bearer ${ADMIN_TOKEN}`)).status, 200);
  });

  it('answers 403 to an owner without the operator right, and serves an operator account', async () => {
    const owner = await insertOwner(t.db, 'plain-owner@example.com');
    assert.equal((await scrape(api.url, `Bearer ${api.deps.tokens.issue({ id: owner, role: 'pro' }).access_token}`)).status, 403);
    const operator = await insertOwner(t.db, 'operator@example.com', { permissions: ['agent.use', 'agent.admin'] });
    assert.equal((await scrape(api.url, `Bearer ${api.deps.tokens.issue({ id: operator, role: 'pro' }).access_token}`)).status, 200);
  });

  it('counts turns, sandbox groups, host slots, enrolled hosts and queued jobs from the rows', async () => {
    const { text } = await scrape(api.url, `Bearer ${METRICS_TOKEN}`);
    assert.equal(valueOf(text, 'agent_turns', { state: 'queued' }), 2);
    assert.equal(valueOf(text, 'agent_turns', { state: 'running' }), 1);
    assert.equal(valueOf(text, 'agent_turns', { state: 'failed' }), 0);
    assert.equal(valueOf(text, 'agent_sandbox_groups', { state: 'running' }), 0);
    assert.equal(valueOf(text, 'agent_host_slots_capacity', { host: 'host-a' }), 4);
    assert.equal(valueOf(text, 'agent_host_slots_used', { host: 'host-a' }), 1);
    assert.equal(valueOf(text, 'agent_host_slots_capacity', { host: 'host-b' }), 2, 'the saved number caps the reported one');
    assert.equal(valueOf(text, 'agent_host_slots_used', { host: 'host-b' }), 0);
    assert.equal(valueOf(text, 'agent_hosts_enrolled'), 2);
    assert.equal(valueOf(text, 'agent_jobs_queued'), 2);
    const refreshed = valueOf(text, 'agent_metrics_refresh_last_success_timestamp_seconds')!;
    assert.ok(Math.abs(refreshed - Date.now() / 1000) < 60, `refreshed at ${refreshed}`);
  });

  it('counts requests per matched route pattern, method and status class, never by raw path', async () => {
    const before = valueOf((await scrape(api.url, `Bearer ${METRICS_TOKEN}`)).text, 'agent_http_requests_total', { route: '/health', method: 'GET', status_class: '2xx' }) ?? 0;
    assert.equal((await fetch(`${api.url}/health`)).status, 200);
    assert.equal((await fetch(`${api.url}/health`)).status, 200);
    assert.equal((await fetch(`${api.url}/v1/agent/jobs/job-secret-id-123`)).status, 401);
    assert.equal((await fetch(`${api.url}/no/such/path-xyz`)).status, 404);
    const { text } = await scrape(api.url, `Bearer ${METRICS_TOKEN}`);
    assert.equal(valueOf(text, 'agent_http_requests_total', { route: '/health', method: 'GET', status_class: '2xx' }), before + 2);
    assert.ok((valueOf(text, 'agent_http_requests_total', { route: '/v1/agent/jobs/:jobId', method: 'GET', status_class: '4xx' }) ?? 0) >= 1);
    assert.ok((valueOf(text, 'agent_http_requests_total', { route: 'unmatched', method: 'GET', status_class: '4xx' }) ?? 0) >= 1);
    assert.doesNotMatch(text, /job-secret-id-123|path-xyz/);
    const latency = parsePrometheus(text).find((f) => f.name === 'agent_http_request_duration_seconds');
    assert.equal(latency?.type, 'HISTOGRAM');
    // The parser folds a labelled histogram's series into one, so its count is read from the text.
    const count = /^agent_http_request_duration_seconds_count\{route="\/health",method="GET"\} (\d+)$/m.exec(text);
    assert.ok(Number(count?.[1]) >= 2, 'latency observed per route pattern');
  });

  it('still answers during a PostgreSQL outage, with the last values and their age', async () => {
    // A second API whose whole pool goes away after a first refresh: PostgreSQL unreachable for it.
    const pool = createDb({ url: t.url, poolMax: 2, applicationName: 'metrics-outage' });
    const second = await startTestApi({ db: pool, env: { METRICS_TOKEN } });
    try {
      const metrics = apiMetricsOf(second.deps);
      await metrics.start(pool, { defaultSlots: 3, log: second.deps.log, everyMs: 100 });
      assert.ok((valueOf((await scrape(second.url, `Bearer ${METRICS_TOKEN}`)).text, 'agent_metrics_refresh_last_success_timestamp_seconds') ?? 0) > 0);
      await pool.destroy();
      const failures = async () => valueOf((await scrape(second.url, `Bearer ${METRICS_TOKEN}`)).text, 'agent_metrics_refresh_failures_total') ?? 0;
      await waitFor(async () => (await failures()) >= 1, 'a failed refresh');
      const stamped = valueOf((await scrape(second.url, `Bearer ${METRICS_TOKEN}`)).text, 'agent_metrics_refresh_last_success_timestamp_seconds')!;
      const seen = await failures();
      await waitFor(async () => (await failures()) >= seen + 2, 'two more failed refreshes');
      const during = await scrape(second.url, `Bearer ${METRICS_TOKEN}`);
      assert.equal(during.status, 200);
      assert.equal(valueOf(during.text, 'agent_turns', { state: 'queued' }), 2);
      assert.equal(valueOf(during.text, 'agent_host_slots_capacity', { host: 'host-a' }), 4);
      assert.equal(valueOf(during.text, 'agent_metrics_refresh_last_success_timestamp_seconds'), stamped, 'the age of the values shows');
      assert.equal((await scrape(second.url, `Bearer ${ADMIN_TOKEN}`)).status, 200, 'the admin token needs no database either');
    } finally {
      second.deps.metrics?.stop();
      await second.close();
    }
  });
});
