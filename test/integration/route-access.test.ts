/**
 * The authorization walk (docs/security.md): for every route in the live route tables of the
 * gateway and the control-plane API, every wrong credential gets 401/403 on the canonical
 * spelling, and every other spelling the HTTP stack could route (case, trailing and doubled
 * slashes, percent-encoded letters and slashes, dot segments, `;` and `%00` suffixes) gets
 * 401/403/404/405: never a 2xx, 3xx or 5xx.
 */
import assert from 'node:assert/strict';
import type { Access, RouteEntry } from '../../lib/http/route-access';
import { createKey, signUpAndLogIn } from '../support/accounts';
import { ADMIN_TOKEN } from '../support/admin';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { rawRequest, type RawAnswer } from '../support/raw-request';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { isAgentApiPath } from '../../gateway/agent-api/agent-api-proxy';
import { methodsToWalk } from '../support/walked-methods';

function send(base: string, method: string, path: string, authorization?: string): Promise<RawAnswer> {
  return rawRequest(base, { method, path, authorization });
}

/** The route's path with each `:param` filled in. */
function concrete(path: string): string {
  return path.replace(/:(\w+)/g, 'x1');
}

/** Every other spelling of `path` an HTTP stack could route to it. */
export function spellings(path: string): string[] {
  const segments = path.split('/');
  const firstLetter = path.search(/[a-z]/);
  const out = [
    path.toUpperCase(),
    `/${path[1]!.toUpperCase()}${path.slice(2)}`,
    `${path}/`,
    `/${path}`,
    path.replace(/\/(?=[^/]*$)/, '//'),
    `${path.slice(0, firstLetter)}%${path.charCodeAt(firstLetter).toString(16).toUpperCase()}${path.slice(firstLetter + 1)}`,
    `${path.slice(0, firstLetter)}%${path.charCodeAt(firstLetter).toString(16)}${path.slice(firstLetter + 1)}`,
    `${path};a=b`,
    `${path}%00`,
    `${path}%2500`,
    `${path}/.`,
  ];
  if (segments.length > 2) {
    out.push(
      [segments[0], segments[1], '.', ...segments.slice(2)].join('/'),
      [segments[0], segments[1], 'x', '..', ...segments.slice(2)].join('/'),
      [segments[0], segments[1], '%2e', ...segments.slice(2)].join('/'),
      `${segments.slice(0, 2).join('/')}%2F${segments.slice(2).join('/')}`,
      `${segments.slice(0, 2).join('/')}%2f${segments.slice(2).join('/')}`,
      `${segments.slice(0, 2).join('/')}\\${segments.slice(2).join('/')}`,
    );
  }
  return [...new Set(out)].filter((p) => p !== path);
}

/** What a wrong credential must get on the canonical spelling of a route requiring `access`. */
function expected(access: Access, credential: string): number[] {
  if (['none', 'garbage', 'basic'].includes(credential)) return [401];
  if (['admin', 'operator', 'owner'].includes(access)) return [403];
  return [401, 403];
}

describe('authorization on every route (gateway and control-plane API, PostgreSQL)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let gw: TestGateway;
  let api: TestApi;
  const credentials = new Map<string, string | undefined>();

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    // The gateway also serves the API's agent paths (docs/one-origin.md): the walk goes through it too.
    gw = await startTestGateway({
      db: t.db,
      env: {
        USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false',
        GATEWAY_GRANT_DISPATCH_TOKEN: 'dispatch-token-of-at-least-32-bytes-long', AUTH_FAILURE_BLOCK_THRESHOLD: '1000000',
        GATEWAY_AGENT_API_URL: api.url,
      },
    });
    const session = await signUpAndLogIn(gw.url, t.db, 'walker@example.com');
    credentials.set('none', undefined);
    credentials.set('garbage', 'Bearer not-a-credential');
    credentials.set('user key', `Bearer ${await createKey(gw.url, session)}`);
    credentials.set('user access token', `Bearer ${session.accessToken}`);
    credentials.set('basic', 'Basic YWRtaW46YWRtaW4=');
  });
  after(async () => {
    await gw?.close();
    await api?.close();
    await t?.drop();
  });

  it('declares access on every route; admin paths need an administrator or an operator', () => {
    for (const [name, routes] of [['gateway', gw.routes], ['api', api.routes]] as const) {
      assert.ok(routes.length > 10, `${name} has a route table`);
      for (const route of routes) {
        // `forwarded`: the gateway hands the request to the API, whose own route (walked below) decides.
        if (route.access === 'forwarded') assert.ok(name === 'gateway' && isAgentApiPath(concrete(route.path.replace('{*rest}', 'x'))), route.path);
        else if (route.path.startsWith('/admin')) assert.ok(['admin', 'operator'].includes(route.access), `${name} ${route.path}: ${route.access}`);
        if (route.path.startsWith('/internal')) assert.equal(route.access, 'internal', route.path);
      }
    }
    const adminRoutes = gw.routes.filter((r) => r.access === 'admin').flatMap((r) => r.methods).length;
    assert.ok(adminRoutes >= 50, `gateway admin routes: ${adminRoutes}`);
  });

  const walk = async (base: string, routes: readonly RouteEntry[]) => {
    const failures: string[] = [];
    let checked = 0;
    for (const route of routes) {
      if (route.access === 'public' || route.access === 'forwarded') continue;
      const path = concrete(route.path);
      for (const method of methodsToWalk(route)) {
        for (const [name, authorization] of credentials) {
          if (route.access === 'key' && name === 'user key') continue; // a valid credential there
          if ((route.access === 'account' || route.access === 'credentials') && name === 'user access token') continue;
          const answer = await send(base, method, path, authorization);
          checked++;
          if (!expected(route.access, name).includes(answer.status)) failures.push(`${method} ${path} (${route.access}) with ${name}: ${answer.status} ${answer.body.slice(0, 120)}`);
        }
        for (const variant of spellings(path)) {
          for (const name of ['none', 'user key']) {
            const answer = await send(base, method, variant, credentials.get(name));
            checked++;
            if (![401, 403, 404, 405].includes(answer.status)) failures.push(`${method} ${variant} (${route.access}) with ${name}: ${answer.status} ${answer.body.slice(0, 120)}`);
          }
        }
      }
    }
    assert.deepEqual(failures, []);
    return checked;
  };

  it('refuses every wrong credential under every spelling on the gateway', async () => {
    assert.ok((await walk(gw.url, gw.routes)) > 1000);
  });

  it('refuses every wrong credential under every spelling on the control-plane API', async () => {
    assert.ok((await walk(api.url, api.routes)) > 100);
  });

  it('refuses the same on the API’s agent routes reached through the gateway', async () => {
    assert.ok(gw.routes.some((r) => r.access === 'forwarded'));
    const forwarded = api.routes.filter((r) => isAgentApiPath(concrete(r.path)));
    assert.ok(forwarded.length > 50, `${forwarded.length} agent routes`);
    assert.ok((await walk(gw.url, forwarded)) > 100);
  });

  it('serves one canonical spelling: an administrator gets 200 there and 404 elsewhere', async () => {
    const admin = `Bearer ${ADMIN_TOKEN}`;
    assert.equal((await send(gw.url, 'GET', '/admin/users', admin)).status, 200);
    for (const variant of ['/ADMIN/users', '/Admin/users', '/admin/users/', '//admin/users', '/admin/%75sers', '/admin/./users']) {
      assert.equal((await send(gw.url, 'GET', variant, admin)).status, 404, variant);
    }
    assert.equal((await send(api.url, 'GET', '/admin/agent/runner-hosts', admin)).status, 200);
    assert.equal((await send(api.url, 'GET', '/ADMIN/agent/runner-hosts', admin)).status, 404);
    assert.equal((await send(api.url, 'GET', '/admin/agent/runner-hosts/', admin)).status, 404);
  });

  it('answers TRACE and other unserved methods on a route with 405 and Allow', async () => {
    for (const [base, path] of [[gw.url, '/admin/users'], [gw.url, '/health'], [api.url, '/v1/agent/jobs'], [api.url, '/health']] as const) {
      for (const method of ['TRACE', 'PUT']) {
        const answer = await rawRequest(base, { method, path });
        assert.equal(answer.status, 405, `${method} ${path}`);
        assert.match(String(answer.headers.allow), /GET/, `${method} ${path}`);
      }
    }
    assert.equal((await send(gw.url, 'TRACE', '/v1/chat/completions')).status, 405);
  });
});
