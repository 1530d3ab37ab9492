/**
 * `GET /admin/recent-requests/offloads` and `POST /admin/recent-requests/clear-errors` against
 * rows in a real PostgreSQL: grouping, shares, failures, filters, the window, validation naming
 * the field, and which rows clear-errors removes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';

const ADMIN_TOKEN = 'admin-token-for-request-log-tests';

interface Row {
  model?: string | null;
  status?: number;
  error_code?: string | null;
  endpoint_id?: string | null;
  user_id?: number | null;
  surface?: string;
  ageDays?: number;
  offload?: unknown;
  session?: string;
}

describe('admin: recent requests', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    gw = await startTestGateway({ db: t.db, env: { ADMIN_TOKEN } });
  });
  after(async () => {
    await gw.close();
    await t.drop();
  });
  beforeEach(async () => {
    await t.db('api_logs').delete();
  });

  async function insert(rows: Row[]): Promise<void> {
    await t.db('api_logs').insert(rows.map((r) => ({
      log_id: randomUUID(), request_id: randomUUID(), created_at: t.db.raw(`now() - make_interval(days => ?)`, [r.ageDays ?? 0]),
      model: r.model === undefined ? 'm' : r.model, endpoint_id: r.endpoint_id ?? 'ep-local', provider: 'p', surface: r.surface ?? 'chat',
      status: r.status ?? 200, error_code: r.error_code ?? null, user_id: r.user_id ?? 1,
      metadata: JSON.stringify({ ...(r.session ? { session_id: r.session } : {}), routing: { provider: 'p', endpoint_id: r.endpoint_id ?? 'ep-local', ...(r.offload === undefined ? {} : { offload: r.offload }) } }),
    })));
  }

  function admin(path: string, init: RequestInit = {}, token = ADMIN_TOKEN): Promise<Response> {
    return fetch(`${gw.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
  }

  interface Listing {
    days: number;
    total_requests: number;
    offloaded_requests: number;
    share: number;
    offloads: Array<{ model: string; route: string; reason: string; requests: number; failures: number; share: number }>;
  }

  it('lists offloads per model, route and reason with shares and failures, within the window and filters', async () => {
    await insert([
      { endpoint_id: 'ep-off', offload: { reason: 'queue_wait' }, session: 's1' },
      { endpoint_id: 'ep-off', offload: 'queue_wait', status: 502, error_code: 'upstream_error', user_id: 2 },
      { endpoint_id: 'ep-local', offload: { engine_wait: true, offload_endpoint_id: 'ep-off' } },
      { endpoint_id: 'ep-local' },
      { model: 'n', surface: 'embeddings' },
      { endpoint_id: 'ep-off', offload: { reason: 'last_resort' }, ageDays: 3 },
    ]);
    const res = await admin('/admin/recent-requests/offloads');
    assert.equal(res.status, 200);
    const body = (await res.json()) as Listing;
    assert.deepEqual([body.days, body.total_requests, body.offloaded_requests, body.share], [1, 5, 3, 0.6]);
    assert.deepEqual(body.offloads, [
      { model: 'm', route: 'ep-off', reason: 'queue_wait', requests: 2, failures: 1, share: 0.5 },
      { model: 'm', route: 'ep-off', reason: 'engine_wait', requests: 1, failures: 1, share: 0.25 },
    ]);

    const week = (await (await admin('/admin/recent-requests/offloads?days=7')).json()) as Listing;
    assert.equal(week.offloaded_requests, 4, 'the older row is inside a 7-day window');
    assert.ok(week.offloads.some((g) => g.reason === 'last_resort'));

    const byUser = (await (await admin('/admin/recent-requests/offloads?user_id=2')).json()) as Listing;
    assert.deepEqual(byUser.offloads.map((g) => [g.reason, g.requests, g.share]), [['queue_wait', 1, 1]]);
    const bySession = (await (await admin('/admin/recent-requests/offloads?session_id=s1')).json()) as Listing;
    assert.equal(bySession.total_requests, 1);
    const byType = (await (await admin('/admin/recent-requests/offloads?type=embeddings&model=n')).json()) as Listing;
    assert.deepEqual([byType.total_requests, byType.offloaded_requests, byType.offloads.length], [1, 0, 0]);
  });

  it('answers 400 naming the invalid parameter or field', async () => {
    for (const [query, field] of [['days=0', 'days'], ['days=91', 'days'], ['type=bogus', 'type'], ['user_id=abc', 'user_id']] as const) {
      const res = await admin(`/admin/recent-requests/offloads?${query}`);
      assert.equal(res.status, 400, query);
      const body = (await res.json()) as { error: { param: string; message: string } };
      assert.equal(body.error.param, field);
      assert.match(body.error.message, new RegExp(`'${field}'`));
    }
    const res = await admin('/admin/recent-requests/clear-errors', { method: 'POST', body: JSON.stringify({ days: 'x' }) });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'days');
  });

  it('clears recent error rows only (status >= 400 or an error code), within days', async () => {
    await insert([
      { status: 502, error_code: 'upstream_error' },
      { status: 200, error_code: 'upstream_stream_failed' },
      { status: 429 },
      { status: 200 },
      { status: 500, ageDays: 3 },
      { status: 404, model: 'other' },
    ]);
    const one = await admin('/admin/recent-requests/clear-errors', { method: 'POST', body: JSON.stringify({ model: 'm' }) });
    assert.equal(one.status, 200);
    assert.deepEqual(await one.json(), { deleted: 3 });
    const all = await admin('/admin/recent-requests/clear-errors', { method: 'POST' });
    assert.deepEqual(await all.json(), { deleted: 1 }, 'no body: every model, one day');
    const left = await t.db('api_logs').orderBy('status').select<Array<{ status: number }>>('status');
    assert.deepEqual(left.map((r) => r.status), [200, 500]);
    assert.deepEqual(await (await admin('/admin/recent-requests/clear-errors', { method: 'POST', body: JSON.stringify({ days: 7 }) })).json(), { deleted: 1 });
  });

  it('needs an administrator', async () => {
    await insert([{ status: 502 }]);
    assert.equal((await admin('/admin/recent-requests/offloads', {}, 'wrong')).status, 401);
    assert.equal((await admin('/admin/recent-requests/clear-errors', { method: 'POST' }, 'wrong')).status, 401);
    assert.equal((await t.db('api_logs').count<Array<{ count: string }>>('* as count'))[0]?.count, '1', 'nothing deleted');
  });
});
