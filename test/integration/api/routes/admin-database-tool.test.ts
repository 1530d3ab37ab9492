/**
 * The database tool proxy over the real API and PostgreSQL (docs/agent-admin.md "Database tool").
 * The tool itself is a real HTTP server on 127.0.0.1 that records what reaches it:
 * - setup and open are audited, and the password never shows anywhere;
 * - the proxy forwards every method (OPTIONS and WebDAV's included), path, query, headers and body,
 *   without the operator's credentials, and refuses an unauthenticated one of any method;
 * - each request re-checks the operator's current `agent.admin`;
 * - a saved URL that is not allowed answers 503 and reaches nothing.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admin, ADMIN_TOKEN, assertInvalid } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

const PASSWORD = 'initial-tool-password-7731';
const ENV = {
  AGENT_SETTINGS_ENCRYPTION_KEY: 'settings-encryption-key-of-at-least-32-bytes',
  AGENT_CONTROL_TOKEN_SECRET: 'control-token-secret-of-at-least-32-bytes!!',
  AGENT_DATABASE_TOOL_HOSTS: 'pgadmin.internal',
};

interface Seen { method: string; url: string; headers: IncomingHttpHeaders; body: string }

describe('admin: database tool proxy (PostgreSQL, a tool on loopback)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  let tool: Server;
  let toolUrl: string;
  const seen: Seen[] = [];
  let operatorId: number;
  let operatorToken: string;
  let ownerToken: string;

  before(async () => {
    tool = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(req.url?.startsWith('/missing') ? 404 : 200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': 'pga4_session=abc; Path=/; HttpOnly', connection: 'keep-alive' });
        res.end(`<html>tool saw ${req.method} ${req.url}</html>`);
      });
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`;
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: ENV });
    operatorId = await insertOwner(t.db, 'tool-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'tool-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
  });
  after(async () => {
    await api?.close();
    await t?.drop();
    await new Promise((resolve) => tool?.close(resolve));
  });

  const proxied = (path: string, init: RequestInit = {}) => fetch(`${api.url}/api/admin/agent/pgadmin${path}`, { redirect: 'manual', ...init });

  async function openSession(token: string): Promise<string> {
    const res = await fetch(`${api.url}/admin/agent/database/pgadmin/open`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200, await res.clone().text());
    const setCookie = res.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^agent_dbtool=[\w-]+\.[\w-]+; Path=\/api\/admin\/agent\/pgadmin\/; Max-Age=900; HttpOnly; SameSite=Strict$/);
    return setCookie.split(';')[0]!;
  }

  it('is for operators only: 401 anonymous, 403 for an owner, on setup, open and the proxy', async () => {
    for (const token of [null, ownerToken]) {
      const expected = token === null ? 401 : 403;
      assert.equal((await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: toolUrl, password: PASSWORD }, token)).status, expected);
      assert.equal((await admin(api, 'POST', '/admin/agent/database/pgadmin/open', {}, token)).status, expected);
      assert.equal((await proxied('/', token ? { headers: { authorization: `Bearer ${token}` } } : {})).status, expected);
    }
    assert.equal((await proxied('/', { headers: { cookie: 'agent_dbtool=forged.signature' } })).status, 401);
    // Methods the router would otherwise answer itself get the same check before anything is forwarded.
    for (const method of ['OPTIONS', 'PROPFIND']) {
      const anonymous = await proxied('/browser/', { method, headers: { 'access-control-request-method': 'POST' } });
      assert.equal(anonymous.status, 401, method);
      assert.equal(anonymous.headers.get('allow'), null, `${method}: the router did not answer it`);
      assert.equal((await proxied('/browser/', { method, headers: { authorization: `Bearer ${ownerToken}` } })).status, 403, method);
    }
    assert.equal(seen.length, 0, 'nothing reached the tool');
  });

  it('answers 503 naming the reason before setup, and opens no session', async () => {
    const res = await proxied('/', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 503);
    assert.match(await res.text(), /no database tool URL is saved/);
    assert.equal((await admin(api, 'POST', '/admin/agent/database/pgadmin/open', {})).status, 503);
  });

  it('setup refuses a short password and a URL that is not private or listed; saves a good one, audited without the password', async () => {
    assertInvalid(await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: toolUrl, password: 'short-pw' }), 'password');
    assertInvalid(await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: 'http://203.0.113.7:5050', password: PASSWORD }), 'url');
    assertInvalid(await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: 'http://pgadmin.example.com', password: PASSWORD }), 'url');
    assertInvalid(await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: toolUrl, password: PASSWORD, email: 'x' }), 'email');
    assert.equal((await t.db('agent_settings').count<Array<{ count: string }>>('* as count'))[0]?.count, '0', 'refusals saved nothing');

    const saved = await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: toolUrl, password: PASSWORD }, operatorToken);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body, { url: toolUrl, password_configured: true, open: '/admin/agent/database/pgadmin/open' });
    const settings = await admin<{ settings: Record<string, { configured?: boolean; value?: unknown }> }>(api, 'GET', '/admin/agent/settings');
    assert.equal(settings.body.settings.database_tool_password?.configured, true);
    assert.equal(settings.body.settings.database_tool_url?.value, toolUrl);
    const audit = await t.db('agent_audit_log').where({ action: 'agent.database.pgadmin.setup' }).first<{ category: string; actor_user_id: string }>();
    assert.equal(audit?.category, 'database');
    assert.equal(Number(audit?.actor_user_id), operatorId);
    const everything = JSON.stringify([saved.body, settings.body, await t.db('agent_audit_log').select('*'), api.logs.lines]);
    assert.ok(!everything.includes(PASSWORD));
  });

  it('opens an audited session; the proxy forwards method, path, query and body, never the operator credentials', async () => {
    const cookie = await openSession(operatorToken);
    const opened = await t.db('agent_audit_log').where({ action: 'agent.database.pgadmin.open' }).first<{ category: string; target_id: string; actor_user_id: string }>();
    assert.deepEqual([opened?.category, opened?.target_id, Number(opened?.actor_user_id)], ['database', toolUrl, operatorId]);

    seen.length = 0;
    const page = await proxied('/browser/?tab=1&q=a%20b', { headers: { cookie: `${cookie}; pga4_session=abc` } });
    assert.equal(page.status, 200);
    assert.equal(await page.text(), '<html>tool saw GET /browser/?tab=1&q=a%20b</html>');
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('set-cookie'), 'pga4_session=abc; Path=/; HttpOnly');
    const got = seen[0]!;
    assert.equal(got.headers.cookie, 'pga4_session=abc', 'the tool gets its own cookies, not the proxy session');
    assert.equal(got.headers.authorization, undefined);
    assert.equal(got.headers['x-script-name'], '/api/admin/agent/pgadmin');
    assert.equal(got.headers.host, new URL(toolUrl).host);

    const body = JSON.stringify({ query: "select 'é' -- not ours to judge" });
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await proxied('/sqleditor/query_tool/start/1', { method, headers: { cookie, 'content-type': 'application/json' }, body });
      assert.equal(res.status, 200);
      assert.deepEqual([seen.at(-1)?.method, seen.at(-1)?.url, seen.at(-1)?.body], [method, '/sqleditor/query_tool/start/1', body]);
    }
    // Every method is the tool's, OPTIONS and WebDAV's included, with its headers and body.
    for (const method of ['OPTIONS', 'PROPFIND', 'MKCOL', 'PATCH']) {
      const res = await proxied('/dav/folder?depth=1', { method, headers: { cookie, depth: '1', 'content-type': 'application/xml', 'x-tool-probe': method }, body: `<propfind method="${method}"/>` });
      assert.equal(res.status, 200, method);
      assert.equal(await res.text(), `<html>tool saw ${method} /dav/folder?depth=1</html>`);
      const got = seen.at(-1)!;
      assert.deepEqual([got.method, got.url, got.body], [method, '/dav/folder?depth=1', `<propfind method="${method}"/>`]);
      assert.deepEqual([got.headers.depth, got.headers['content-type'], got.headers['x-tool-probe'], got.headers.cookie], ['1', 'application/xml', method, undefined]);
    }
    assert.equal((await proxied('/missing', { headers: { cookie } })).status, 404, 'the tool\'s own status passes through');
    assert.equal((await proxied('', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 200, 'the bare prefix, with a bearer credential');
    assert.equal(seen.at(-1)?.url, '/');
  });

  it('re-checks agent.admin on every request: a withdrawn permission closes an open session, restoring it reopens', async () => {
    const cookie = await openSession(operatorToken);
    assert.equal((await proxied('/x', { headers: { cookie } })).status, 200);
    await t.db('users').where({ id: operatorId }).update({ permissions: ['agent.use'] });
    const count = seen.length;
    assert.equal((await proxied('/x', { headers: { cookie } })).status, 403);
    assert.equal(seen.length, count, 'nothing reached the tool');
    await t.db('users').where({ id: operatorId }).update({ permissions: ['agent.admin'] });
    assert.equal((await proxied('/x', { headers: { cookie } })).status, 200);
    const tampered = cookie.replace(/\.(.)/, (_m, c: string) => `.${c === 'A' ? 'B' : 'A'}`);
    assert.equal((await proxied('/x', { headers: { cookie: tampered } })).status, 401);
  });

  it('answers 503 and reaches nothing when the saved URL is not allowed, 502 when the tool is down', async () => {
    const cookie = await openSession(ADMIN_TOKEN);
    assert.equal((await admin(api, 'PUT', '/admin/agent/settings', { settings: { database_tool_url: 'http://203.0.113.7:5050' } })).status, 200);
    const count = seen.length;
    const refused = await proxied('/x', { headers: { cookie } });
    assert.equal(refused.status, 503);
    assert.match(await refused.text(), /203\.0\.113\.7 is not a loopback or private-network address/);
    assert.equal(seen.length, count);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.equal((await admin(api, 'PUT', '/admin/agent/settings', { settings: { database_tool_url: `http://127.0.0.1:${port}` } })).status, 200);
    assert.equal((await proxied('/x', { headers: { cookie } })).status, 502);
  });
});
