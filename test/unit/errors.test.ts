import assert from 'node:assert/strict';
import Koa from 'koa';
import { AppError, statusOf, type ErrorCode } from '../../lib/errors';
import { errorMiddleware, toAppError } from '../../lib/http/error-middleware';
import { requestContext, requestIdFrom, type RequestState } from '../../lib/http/request-context';
import { serve } from '../../lib/http/serve';
import { captureLogs } from '../support/logs';

describe('errors', () => {
  it('maps every code to its status', () => {
    const expected: Record<ErrorCode, number> = {
      invalid_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, model_not_found: 404, conflict: 409,
      precondition_failed: 412, payload_too_large: 413, rate_limited: 429, internal: 500, database_not_configured: 500,
      not_implemented: 501, upstream_error: 502, service_unavailable: 503, no_provider_available: 503, gateway_timeout: 504,
    };
    for (const [code, status] of Object.entries(expected)) assert.equal(statusOf(code as ErrorCode), status, code);
  });

  it('hides messages of unexpected errors and keeps client errors', () => {
    assert.equal(toAppError(new Error('db password wrong')).expose, false);
    assert.equal(new AppError('invalid_request', 'bad').expose, true);
    assert.equal(new AppError('database_not_configured', 'Database not configured').expose, true);
    assert.equal(new AppError('internal', 'boom').expose, false);
  });

  it('accepts only safe client request ids', () => {
    assert.equal(requestIdFrom('abc-123'), 'abc-123');
    assert.notEqual(requestIdFrom('bad id with spaces'), 'bad id with spaces');
    assert.notEqual(requestIdFrom('x'.repeat(129)), 'x'.repeat(129));
    assert.match(requestIdFrom(undefined), /^[0-9a-f-]{36}$/);
  });

  it('renders OpenAI-shaped bodies, hides internals and logs them with the request id', async () => {
    const logs = captureLogs();
    const app = new Koa<RequestState>();
    app.silent = true;
    app.use(requestContext(logs.log));
    app.use(errorMiddleware());
    app.use((ctx) => {
      if (ctx.path === '/bad') throw new AppError('invalid_request', "Invalid field 'model'", { param: 'model' });
      if (ctx.path === '/limited') throw new AppError('rate_limited', 'slow down', { headers: { 'Retry-After': '3' } });
      throw new Error('secret internals');
    });
    const serving = await serve(app, { host: '127.0.0.1', port: 0 });
    try {
      const bad = await fetch(`${serving.url}/bad`);
      assert.equal(bad.status, 400);
      assert.deepEqual(await bad.json(), { error: { message: "Invalid field 'model'", type: 'invalid_request_error', code: 'invalid_request', param: 'model' } });
      const limited = await fetch(`${serving.url}/limited`);
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '3');
      const boom = await fetch(`${serving.url}/boom`, { headers: { 'x-request-id': 'rid-1' } });
      assert.equal(boom.status, 500);
      assert.deepEqual(await boom.json(), { error: { message: 'Internal server error', type: 'server_error', code: 'internal', param: null } });
      await new Promise((r) => setTimeout(r, 50));
      const logged = logs.lines.find((l) => l.level === 'error');
      assert.equal(logged?.request_id, 'rid-1');
      assert.match(JSON.stringify(logged), /secret internals/);
      const access = logs.lines.filter((l) => l.event === 'http_request').map((l) => [l.path, l.status]);
      assert.deepEqual(access, [['/bad', 400], ['/limited', 429], ['/boom', 500]]);
    } finally {
      await serving.close(500);
    }
  });
});
