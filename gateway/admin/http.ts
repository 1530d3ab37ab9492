/**
 * Small helpers shared by the admin routers: JSON bodies validated with zod (400 naming the
 * field), the database of an admin request, and 404 lookups of models and routes in the
 * effective registry.
 */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { GatewayDeps } from '../deps';
import type { Model, Route } from '../registry/types';
import type { AccessGuard } from '../../lib/http/route-access';
import type { GatewayState } from '../surfaces/state';
import { adminAccess, adminDb } from './guard';

const ADMIN_BODY_LIMIT = 256 * 1024;

/** The request body parsed and validated by `schema` (an empty body is `{}`). */
export async function adminBody<T extends z.ZodType>(ctx: { req: IncomingMessage }, schema: T): Promise<z.infer<T>> {
  const raw = await readJsonBody(ctx.req, ADMIN_BODY_LIMIT);
  return validateBody(schema, raw ?? {});
}

/** The database (the guard already answered 500 without one). */
export function dbOf(deps: GatewayDeps): Db {
  return adminDb(deps.database.db);
}

/** A model of the effective registry by id (not alias), or 404. */
export function modelOr404(deps: GatewayDeps, modelId: string): Model {
  const model = deps.runtimeConfig.effective.registry.byName.get(modelId);
  if (!model || model.id !== modelId) throw new AppError('not_found', `Unknown model '${modelId}'`, { param: 'model_id' });
  return model;
}

/** A route of a model by route id, or 404. */
export function routeOr404(model: Model, routeId: string): Route {
  const route = model.routes.find((r) => r.routeId === routeId);
  if (!route) throw new AppError('not_found', `Model '${model.id}' has no route '${routeId}'`, { param: 'route_id' });
  return route;
}

/** Query parameters validated by `schema`; the 400 names the first failing parameter. */
export function adminQuery<T extends z.ZodType>(schema: T, query: unknown): z.infer<T> {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join('.') : ((issue as { keys?: string[] }).keys?.[0] ?? 'query');
  throw new AppError('invalid_request', `Invalid query parameter '${field}': ${issue.message}`, { param: field });
}

/** A 400 naming the field. */
export function invalid(field: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${field}': ${message}`, { param: field });
}

/** The access guard of a gateway admin route: an administrator and a database. */
export function adminRoute(deps: GatewayDeps): AccessGuard<GatewayState> {
  return adminAccess<GatewayState>({ adminToken: deps.settings.ADMIN_TOKEN, tokens: deps.tokens, db: deps.database.db, gate: deps.gate, keys: deps.keys });
}
