/**
 * The OpenAPI builder (lib/http/openapi.ts) and route descriptions (lib/http/route-docs.ts):
 * a description naming no route stops startup; paths, access, security, zod bodies and queries
 * (recursive schemas hoisted so every `$ref` resolves) come out as documented in docs/openapi.md.
 */
import assert from 'node:assert/strict';
import { z } from 'zod';
import { openApiDocument, openApiPath } from '../../lib/http/openapi';
import { accessGuard, createRouter, publicAccess, routeTable } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';

const INFO = { title: 't', version: '1', description: 'd' };
type Op = { 'x-access': string; security: unknown[]; parameters?: Array<{ name: string; in: string; required: boolean }>; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; responses: Record<string, unknown> };

describe('OpenAPI description of a route table', () => {
  it('spells Koa paths the OpenAPI way, with their parameters', () => {
    assert.deepEqual(openApiPath('/jobs/:jobId/turns/:seq'), { path: '/jobs/{jobId}/turns/{seq}', params: [{ name: 'jobId', rest: false }, { name: 'seq', rest: false }] });
    assert.deepEqual(openApiPath('/x/{*rest}'), { path: '/x/{rest}', params: [{ name: 'rest', rest: true }] });
  });

  it('refuses at startup a description that names no route, naming it', () => {
    const router = createRouter({ prefix: '/v1' });
    router.get('/a', publicAccess(), (ctx) => void (ctx.body = 'a'));
    documentRoute(router, 'POST', '/a', { noBody: true });
    assert.throws(() => routeTable([router]), /route description for POST \/v1\/a names no route/);
  });

  it('describes bodies, queries, access and statuses from the declarations', () => {
    const node: z.ZodType = z.lazy(() => z.object({ name: z.string(), children: z.array(node) }));
    const body = z.object({ tree: node, count: z.number().int().default(1) }).strict();
    const query = z.object({ limit: z.coerce.number().int().optional(), state: z.enum(['a', 'b']) });
    const router = createRouter({ prefix: '/v1' });
    router.post('/things/:id', accessGuard('operator'), (ctx) => void (ctx.body = {}));
    router.get('/things', accessGuard('metrics'), (ctx) => void (ctx.body = {}));
    documentRoute(router, 'POST', '/things/:id', { body, success: 201, statuses: [409] });
    documentRoute(router, 'GET', '/things', { query });
    const doc = openApiDocument(INFO, routeTable([router])) as { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
    const post = doc.paths['/v1/things/{id}']!.post!;
    assert.equal(post['x-access'], 'operator');
    assert.deepEqual(post.security, [{ adminToken: [] }, { accessToken: [] }]);
    assert.deepEqual(Object.keys(post.responses), ['201', '400', '401', '403', '404', '409', '413']);
    const schema = post.requestBody!.content['application/json']!.schema;
    assert.deepEqual((schema as { required: string[] }).required, ['tree'], 'a defaulted field is optional to a client');
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    assert.ok(refs.length > 0);
    for (const ref of refs) {
      const name = /#\/components\/schemas\/([^"]+)/.exec(ref)?.[1];
      assert.ok(name && doc.components.schemas[name], `${ref} resolves in the document`);
    }
    const get = doc.paths['/v1/things']!.get!;
    assert.deepEqual(get.parameters!.map((p) => [p.name, p.in, p.required]), [['limit', 'query', false], ['state', 'query', true]]);
    assert.equal(get.requestBody, undefined);
    assert.equal(get['x-access'], 'metrics');
  });
});
