/**
 * `GET /admin/agent/console-info` over the real API and PostgreSQL (docs/console.md "Agent
 * operations"): operator only (401 anonymous or a wrong token, 403 an owner without agent.admin),
 * declared `operator` in the route table, and answering the Temporal UI's base URL and the
 * workers' namespace from the settings (the default and a configured pair).
 */
import assert from 'node:assert/strict';
import { ADMIN_TOKEN } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

describe('admin: console info route (PostgreSQL)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let configured: TestApi;
  let operatorToken: string;
  let ownerToken: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    configured = await startTestApi({ db: t.db, env: { TEMPORAL_UI_URL: 'https://temporal.example.test/ui/', TEMPORAL_NAMESPACE: 'agents-prod' } });
    const operatorId = await insertOwner(t.db, 'info-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'info-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
  });
  after(async () => {
    await api?.close();
    await configured?.close();
    await t?.drop();
  });

  const get = async (target: TestApi, token: string | null): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${target.url}/admin/agent/console-info`, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: await res.json() };
  };

  it('is for operators only: 401 anonymous or with a wrong token, 403 for an owner, 200 for agent.admin and ADMIN_TOKEN', async () => {
    assert.equal((await get(api, null)).status, 401);
    assert.equal((await get(api, 'wrong-token')).status, 401);
    assert.equal((await get(api, ownerToken)).status, 403);
    assert.equal((await get(api, operatorToken)).status, 200);
    assert.equal((await get(api, ADMIN_TOKEN)).status, 200);
  });

  it('is declared an operator route in the route table', () => {
    const entry = api.routes.find((r) => r.path === '/admin/agent/console-info');
    assert.deepEqual(entry && { methods: entry.methods.filter((m) => m !== 'HEAD'), access: entry.access }, { methods: ['GET'], access: 'operator' });
  });

  it('answers the dev server UI and the default namespace by default, and the configured pair (no trailing slash) otherwise', async () => {
    assert.deepEqual((await get(api, operatorToken)).body, { temporal_ui_url: 'http://127.0.0.1:8233', temporal_namespace: 'default' });
    assert.deepEqual((await get(configured, ADMIN_TOKEN)).body, { temporal_ui_url: 'https://temporal.example.test/ui', temporal_namespace: 'agents-prod' });
  });
});
