/**
 * The database tool proxy in front of the real database admin tool, pgAdmin 4 in server mode on
 * 127.0.0.1 (installed by the bootstrap: ops/dev/pgadmin.ts), over the real API and PostgreSQL
 * (docs/agent-admin.md "Database tool"). The operator saves the tool's URL and initial password
 * through the setup route; pgAdmin's first start takes its administrator's password from that
 * saved, sealed setting (ops/dev/database-tool-password.ts). Through the proxy, under
 * `/api/admin/agent/pgadmin/`, the operator logs in with it (pgAdmin's login form), and pgAdmin's
 * UI and API answer GET, POST, PUT and DELETE with its session cookie; an owner is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { savedDatabaseToolPassword } from '../../../../ops/dev/database-tool-password';
import { freeLoopbackPort } from '../../../../ops/dev/free-port';
import { startPgadmin, type PgadminServer } from '../../../../ops/dev/pgadmin';
import { admin } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

const PASSWORD = 'initial-pgadmin-password-4417';
const EMAIL = 'dbtool-admin@example.com';
const PREFIX = '/api/admin/agent/pgadmin';
const ENV = {
  AGENT_SETTINGS_ENCRYPTION_KEY: 'settings-encryption-key-of-at-least-32-bytes',
  AGENT_CONTROL_TOKEN_SECRET: 'control-token-secret-of-at-least-32-bytes!!',
};

/** The cookies a browser would keep for the proxy path: name → value, from each answer's Set-Cookie. */
class CookieJar {
  readonly values = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.values.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }
  header(): string {
    return [...this.values].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

describe('admin: database tool proxy in front of pgAdmin 4 (PostgreSQL, pgAdmin on loopback)', function () {
  this.timeout(180_000);
  let t: TestDatabase;
  let api: TestApi;
  let pgadmin: PgadminServer | undefined;
  let dataDir: string;
  let operatorToken: string;
  let ownerToken: string;
  const jar = new CookieJar();

  /** A request through the proxy with the jar's cookies; the answer's cookies are kept. */
  const proxied = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${api.url}${PREFIX}${path}`, { redirect: 'manual', ...init, headers: { cookie: jar.header(), ...(init.headers as Record<string, string> | undefined) } });
    jar.take(res);
    return res;
  };

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: ENV });
    operatorToken = api.deps.tokens.issue({ id: await insertOwner(t.db, 'pgadmin-operator@example.test', { permissions: ['agent.admin'] }), role: 'pro' }).access_token;
    ownerToken = api.deps.tokens.issue({ id: await insertOwner(t.db, 'pgadmin-owner@example.test', { permissions: ['agent.use'] }), role: 'pro' }).access_token;
    const port = await freeLoopbackPort();
    const setup = await admin(api, 'POST', '/admin/agent/database/pgadmin/setup', { url: `http://127.0.0.1:${port}`, password: PASSWORD }, operatorToken);
    assert.equal(setup.status, 200, JSON.stringify(setup.body));
    // The tool's first start reads the saved initial password the way the dev stack does.
    const password = await savedDatabaseToolPassword(t.db, ENV.AGENT_SETTINGS_ENCRYPTION_KEY);
    assert.equal(password, PASSWORD);
    dataDir = mkdtempSync(join(tmpdir(), 'pgadmin-test-'));
    pgadmin = await startPgadmin({ dataDir, port, email: EMAIL, password });
  });
  after(async () => {
    await pgadmin?.stop();
    await api?.close();
    await t?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses an owner and an anonymous caller before anything reaches pgAdmin', async () => {
    assert.equal((await fetch(`${api.url}${PREFIX}/login`, { headers: { authorization: `Bearer ${ownerToken}` } })).status, 403);
    assert.equal((await fetch(`${api.url}${PREFIX}/login`)).status, 401);
    assert.equal((await fetch(`${api.url}/admin/agent/database/pgadmin/open`, { method: 'POST', headers: { authorization: `Bearer ${ownerToken}` } })).status, 403);
  });

  it('lets the operator log in with the saved initial password and use pgAdmin through the proxy (GET, POST, PUT, DELETE, cookies)', async () => {
    const opened = await fetch(`${api.url}/admin/agent/database/pgadmin/open`, { method: 'POST', headers: { authorization: `Bearer ${operatorToken}` } });
    assert.equal(opened.status, 200);
    jar.take(opened);
    assert.ok(jar.values.has('agent_dbtool'));

    // pgAdmin's login page, its URLs under the proxy's prefix.
    const page = await proxied('/login');
    assert.equal(page.status, 200);
    const html = await page.text();
    const csrf = /"csrfToken": "([^"]+)"/.exec(html)?.[1];
    assert.ok(csrf, 'the login form carries its CSRF token');
    assert.match(html, new RegExp(`"loginUrl": "${PREFIX}/authenticate/login"`));
    assert.ok(jar.values.has('pga4_session'), 'pgAdmin’s session cookie reached the browser');

    const wrong = await proxied('/authenticate/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf_token: csrf, email: EMAIL, password: 'not-the-password' }) });
    assert.notEqual(wrong.headers.get('location'), `${PREFIX}/browser/`, 'a wrong password does not log in');
    const login = await proxied('/authenticate/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf_token: csrf, email: EMAIL, password: PASSWORD }) });
    assert.equal(login.status, 302);
    assert.equal(login.headers.get('location'), `${PREFIX}/browser/`);

    const browser = await proxied('/browser/');
    assert.equal(browser.status, 200);
    assert.match(await browser.text(), new RegExp(`${PREFIX}/static/`));
    const ping = await proxied('/misc/ping');
    assert.equal(await ping.text(), 'PING');

    // pgAdmin's API: its CSRF token comes with the logged-in session's scripts.
    const utils = await (await proxied('/browser/js/utils.js')).text();
    const token = /pgAdmin\['csrf_token'\] = '([^']+)'/.exec(utils)?.[1];
    assert.ok(token, 'the session’s CSRF token');
    const json = { 'content-type': 'application/json', 'x-pga-csrftoken': token };
    const created = await proxied('/browser/server_group/obj/', { method: 'POST', headers: json, body: JSON.stringify({ name: 'proxy-test-group' }) });
    assert.equal(created.status, 200, await created.clone().text());
    const id = ((await created.json()) as { node: { _id: string | number } }).node._id;
    const renamed = await proxied(`/browser/server_group/obj/${id}`, { method: 'PUT', headers: json, body: JSON.stringify({ name: 'proxy-test-renamed' }) });
    assert.equal(renamed.status, 200, await renamed.clone().text());
    const labels = async () => ((await (await proxied('/browser/server_group/nodes/', { headers: json })).json()) as { data: Array<{ label: string }> }).data.map((g) => g.label);
    assert.ok((await labels()).includes('proxy-test-renamed'));
    const deleted = await proxied(`/browser/server_group/obj/${id}`, { method: 'DELETE', headers: json });
    assert.equal(deleted.status, 200, await deleted.clone().text());
    assert.ok(!(await labels()).includes('proxy-test-renamed'));
  });
});
