/**
 * `GET /openapi.json` (public): the service's OpenAPI 3.1 description, built once from its live
 * route table on the first request (the table is fixed once the app is built) and served from
 * memory after that (docs/openapi.md).
 */
import type Router from '@koa/router';
import { createRouter, publicAccess, type RouteEntry } from './route-access';
import { documentRoute } from './route-docs';
import { openApiDocument, type ApiInfo } from './openapi';

/** The router serving `/openapi.json`; `routes` answers the service's whole route table, this route included. */
export function openApiRouter<StateT>(info: ApiInfo, routes: () => readonly RouteEntry[]): Router<StateT> {
  const router = createRouter<StateT>();
  let text: string | undefined;
  router.get('/openapi.json', publicAccess<StateT>(), (ctx) => {
    text ??= JSON.stringify(openApiDocument(info, routes()));
    ctx.type = 'application/json';
    ctx.body = text;
  });
  documentRoute(router, 'GET', '/openapi.json', { summary: "This service's OpenAPI 3.1 description, built from its live route table." });
  return router;
}
