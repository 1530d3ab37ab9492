import assert from 'node:assert/strict';
import Router from '@koa/router';
import Koa from 'koa';
import { errorMiddleware } from '../../lib/http/error-middleware';
import { requestContext } from '../../lib/http/request-context';
import { accessGuard, createRouter, mountRoutes, publicAccess, routeTable } from '../../lib/http/route-access';
import { serve } from '../../lib/http/serve';
import { captureLogs } from '../support/logs';

describe('route access declarations', () => {
  it('lists each route with what it requires', () => {
    const router = createRouter();
    router.get('/a', publicAccess(), (ctx) => void (ctx.body = 'a'));
    router.post('/b/:id', accessGuard('admin', () => undefined), (ctx) => void (ctx.body = 'b'));
    assert.deepEqual(routeTable([router]), [{ methods: ['GET'], path: '/a', access: 'public' }, { methods: ['POST'], path: '/b/:id', access: 'admin' }]);
  });

  it('refuses at startup a route without a guard, router-wide middleware and a loose router', () => {
    const bare = createRouter();
    bare.get('/open', (ctx) => void (ctx.body = 'x'));
    assert.throws(() => routeTable([bare]), /GET \/open declares no access/);
    const late = createRouter();
    late.get('/late', (_ctx, next) => next(), accessGuard('admin'), (ctx) => void (ctx.body = 'x'));
    assert.throws(() => routeTable([late]), /declares no access/, 'the guard must come first');
    const wide = createRouter();
    wide.use(accessGuard('admin'));
    wide.get('/x', publicAccess(), (ctx) => void (ctx.body = 'x'));
    assert.throws(() => routeTable([wide]), /router-wide middleware/);
    const loose = new Router();
    loose.get('/x', publicAccess(), (ctx) => void (ctx.body = 'x'));
    assert.throws(() => routeTable([loose]), /not case-sensitive and strict/);
  });

  it('checks the caller before the path and query text, and answers unserved methods with 405', async () => {
    const app = new Koa();
    app.use(requestContext(captureLogs('route-access').log));
    app.use(errorMiddleware());
    const router = createRouter();
    const calls: string[] = [];
    router.get('/items/:id', accessGuard('admin', (ctx) => {
      calls.push(ctx.path);
      if (ctx.get('authorization') !== 'Bearer ok') throw Object.assign(new Error('no'), { status: 401, expose: true });
    }), (ctx) => void (ctx.body = { id: ctx.params.id }));
    mountRoutes(app, [router]);
    const serving = await serve(app, { host: '127.0.0.1', port: 0 });
    try {
      const get = (path: string, auth = 'Bearer ok') => fetch(`${serving.url}${path}`, { headers: { authorization: auth } });
      assert.equal((await get('/items/1')).status, 200);
      assert.equal((await get('/items/a%00', 'Bearer wrong')).status, 401, 'authentication comes first');
      const nul = await get('/items/a%00');
      assert.equal(nul.status, 400);
      assert.match(((await nul.json()) as { error: { message: string } }).error.message, /path parameter 'id'.*NUL/);
      const query = await get('/items/1?q=%00');
      assert.equal(query.status, 400);
      assert.equal(((await query.json()) as { error: { param: string } }).error.param, 'q');
      assert.equal((await get('/ITEMS/1')).status, 404);
      assert.equal((await get('/items/1/')).status, 404);
      const del = await fetch(`${serving.url}/items/1`, { method: 'DELETE' });
      assert.equal(del.status, 405);
      assert.equal(del.headers.get('allow'), 'HEAD, GET, OPTIONS');
      const options = await fetch(`${serving.url}/items/1`, { method: 'OPTIONS' });
      assert.equal(options.status, 204);
      assert.equal((await fetch(`${serving.url}/nothing`, { method: 'DELETE' })).status, 404);
      assert.ok(calls.length >= 4);
    } finally {
      await serving.close(100);
    }
  });
});
