/**
 * The OpenAPI documents of both services (docs/openapi.md): valid OpenAPI 3.1 by a standard
 * validator, one operation per live route and method both ways (with its access as `x-access`),
 * schemas generated from the routes' own zod objects, and served at `/openapi.json` by the
 * running services.
 */
import assert from 'node:assert/strict';
import type { RouteEntry } from '../../../lib/http/route-access';
import { openApiPath } from '../../../lib/http/openapi';
import { z } from 'zod';
import { createJobSchema } from '../../../agent/jobs/job-commands';
import { auditQuerySchema } from '../../../agent/audit/audit-query';
import { ADMIN_TOKEN } from '../../support/admin';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../../support/api';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { startTestGateway, type TestGateway } from '../../support/gateway';

type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
type Operation = { 'x-access': string; operationId: string; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; parameters?: Array<{ name: string; in: string }>; responses: Record<string, unknown> };

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

async function fetchDocument(base: string): Promise<{ status: number; type: string | null; doc: Document }> {
  const res = await fetch(`${base}/openapi.json`);
  return { status: res.status, type: res.headers.get('content-type'), doc: (await res.json()) as Document };
}

/** Every operation of the document as `METHOD /path` → access (methods OpenAPI has no field for are under `x-other-methods`). */
function operationsOf(doc: Document): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (method !== 'x-other-methods') out.set(`${method.toUpperCase()} ${path}`, op['x-access']);
    }
    const others = (item as Record<string, unknown>)['x-other-methods'] as Record<string, Operation> | undefined;
    for (const [method, op] of Object.entries(others ?? {})) out.set(`${method} ${path}`, op['x-access']);
  }
  return out;
}

/** Every route of the table as `METHOD /path` (OpenAPI spelling) → access. */
function routesOf(routes: readonly RouteEntry[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const route of routes) for (const method of route.methods) out.set(`${method} ${openApiPath(route.path).path}`, route.access);
  return out;
}

/** The differences between the route table and the document, each saying what to do. */
function drift(service: string, routes: readonly RouteEntry[], doc: Document): string[] {
  const served = routesOf(routes);
  const described = operationsOf(doc);
  const problems: string[] = [];
  for (const [key, access] of served) {
    if (!described.has(key)) problems.push(`${service}: route ${key} (access ${access}) has no operation in /openapi.json: the document must be built from the whole route table (lib/http/openapi.ts)`);
    else if (described.get(key) !== access) problems.push(`${service}: ${key} is served with access ${access} but described with x-access ${described.get(key)}`);
  }
  for (const key of described.keys()) if (!served.has(key)) problems.push(`${service}: operation ${key} of /openapi.json is not a live route: remove it`);
  return problems;
}

/** Body-taking routes that say nothing about their body: each must declare it (docs/openapi.md). */
function undescribedBodies(service: string, routes: readonly RouteEntry[]): string[] {
  const out: string[] = [];
  for (const route of routes) {
    if (route.access === 'forwarded') continue;
    for (const method of route.methods) {
      const doc = route.docs?.[method];
      if (BODY_METHODS.has(method) && !doc?.body && !doc?.bodyText && !doc?.noBody) {
        out.push(`${service}: ${method} ${route.path} declares no body: add documentRoute(router, '${method}', '<path as registered>', { body: <the zod schema it validates with> }) beside it, { bodyText: '<what it takes>' } when no zod schema validates it, or { noBody: true } (docs/openapi.md)`);
      }
    }
  }
  return out;
}

async function validate(doc: Document): Promise<void> {
  // The validator is an ES module (this suite is CommonJS).
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(validator.version, '3.1');
  assert.deepEqual(result.errors ?? [], [], JSON.stringify(result.errors, null, 1)?.slice(0, 4000));
  assert.equal(result.valid, true);
}

describe('the OpenAPI documents of the gateway and the control-plane API (PostgreSQL)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let api: TestApi;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    gw = await startTestGateway({
      db: t.db,
      env: { USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, GATEWAY_AGENT_API_URL: api.url, GATEWAY_GRANT_DISPATCH_TOKEN: 'dispatch-token-of-at-least-32-bytes-long' },
    });
  });
  after(async () => {
    await gw?.close();
    await api?.close();
    await t?.drop();
  });

  for (const service of ['gateway', 'api'] as const) {
    it(`serves the ${service}'s document at /openapi.json without a credential, valid OpenAPI 3.1`, async () => {
      const served = await fetchDocument(service === 'gateway' ? gw.url : api.url);
      assert.equal(served.status, 200);
      assert.match(served.type ?? '', /^application\/json/);
      assert.equal(served.doc.openapi, '3.1.0');
      await validate(served.doc);
    });

    it(`describes every live route of the ${service} once, with its access, and nothing else`, async () => {
      const routes = service === 'gateway' ? gw.routes : api.routes;
      const { doc } = await fetchDocument(service === 'gateway' ? gw.url : api.url);
      assert.deepEqual(drift(service, routes, doc), []);
      assert.ok(routes.length > 30, `${service}: ${routes.length} routes`);
      assert.equal(operationsOf(doc).get('GET /openapi.json'), 'public');
    });

    it(`declares the body of every body-taking route of the ${service}`, () => {
      assert.deepEqual(undescribedBodies(service, service === 'gateway' ? gw.routes : api.routes), []);
    });
  }

  it('generates bodies and query parameters from the zod objects the routes validate with', async () => {
    const { doc } = await fetchDocument(api.url);
    const create = doc.paths['/v1/agent/jobs']!.post!;
    const { $schema: _dialect, ...expected } = z.toJSONSchema(createJobSchema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
    assert.deepEqual(create.requestBody?.content['application/json']?.schema, expected);
    assert.deepEqual(Object.keys(create.responses).sort(), ['201', '400', '401', '403', '413', '503']);
    const audit = doc.paths['/admin/agent/audit-log']!.get!;
    assert.deepEqual(audit.parameters?.map((p) => p.name).sort(), Object.keys(auditQuerySchema.shape).sort());
    assert.ok(audit.parameters?.every((p) => p.in === 'query'));
    const turns = doc.paths['/v1/agent/jobs/{jobId}/turns']!.post!;
    assert.deepEqual(turns.parameters?.map((p) => [p.name, p.in]), [['jobId', 'path']]);
    assert.ok(turns.responses['404'], 'a route with a path parameter answers 404');
  });

  it('records each access kind with its security schemes (gateway)', async () => {
    const { doc } = await fetchDocument(gw.url);
    const chat = doc.paths['/v1/chat/completions']!.post! as Operation & { security: unknown[] };
    assert.equal(chat['x-access'], 'key');
    assert.deepEqual(chat.security, [{ apiKey: [] }]);
    const messages = doc.paths['/v1/messages']!.post! as Operation & { security: unknown[] };
    assert.deepEqual(messages.security, [{ apiKey: [] }, { xApiKey: [] }]);
    const health = doc.paths['/health']!.get! as Operation & { security: unknown[] };
    assert.deepEqual(health.security, []);
    assert.equal(doc.paths['/v1/agent/{rest}']!.get!['x-access'], 'forwarded');
  });

  it('describes both services\' /metrics as the Prometheus text format, not JSON', async () => {
    for (const base of [gw.url, api.url]) {
      const { doc } = await fetchDocument(base);
      const ok = (doc.paths['/metrics']!.get!.responses['200'] ?? {}) as { content?: Record<string, unknown> };
      assert.deepEqual(Object.keys(ok.content ?? {}), ['text/plain; version=0.0.4; charset=utf-8'], base);
    }
  });

  it('the validator refuses a broken document (the check can fail)', async () => {
    const { doc } = await fetchDocument(api.url);
    const broken = { ...doc, paths: { ...doc.paths, 'no-leading-slash': {} } };
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const result = await new Validator().validate(broken);
    assert.equal(result.valid, false);
  });
});
