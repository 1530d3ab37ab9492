/**
 * The grant dispatch endpoints the control plane calls (spec 5.3, 5.8; docs/agent-grants.md):
 * `POST /internal/agent/grants` (issue), `/internal/agent/grants/:grantId/renew` and `/revoke`,
 * and `POST /internal/agent/models/check` (may this owner run agent turns on this model?).
 * Guarded by `GATEWAY_GRANT_DISPATCH_TOKEN` (constant-time comparison): unset → 503
 * `Grant dispatch is not configured`, wrong or missing → 401 (counted by the auth-failure
 * blocklist); then, without a database, 500 `Database not configured`.
 */
import type { IncomingMessage } from 'node:http';
import type Router from '@koa/router';
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { bearerToken, readJsonBody, validateBody } from '../../lib/http/json-body';
import { tokenEquals } from '../../lib/identity/constant-time';
import { accessGuard, createRouter, type AccessGuard } from '../../lib/http/route-access';
import type { GatewayDeps } from '../app';
import type { GatewayState } from '../surfaces/state';
import {
  issueGrant, renewGrant, requireActiveOwner, revokeGrant,
  PROMPT_REWRITE_OPERATION_PREFIX, PROMPT_REWRITE_TTL_SECONDS, TITLE_OPERATION_PREFIX, TITLE_TTL_SECONDS, type GrantScope,
} from './grant-store';
import { checkOwnerModel } from './owner-model';

/** Longest lifetime a dispatcher may ask for, in seconds. */
export const MAX_GRANT_TTL_SECONDS = 3600;
const BODY_LIMIT = 16 * 1024;
const ID = z.string().min(1).max(200);

const issueSchema = z.object({
  user_id: z.number().int().positive(),
  model: z.string().min(1).max(200),
  kind: z.enum(['turn', 'prompt_rewrite', 'title']),
  job_id: ID.optional(),
  attempt_id: ID.optional(),
  host_id: ID.optional(),
  group_id: ID.nullable().optional(),
  generation: z.number().int().nonnegative().nullable().optional(),
  operation_id: ID.optional(),
  ttl_seconds: z.number().int().min(10).max(MAX_GRANT_TTL_SECONDS).optional(),
}).strict().superRefine((b, ctx) => {
  if (b.kind === 'turn') {
    for (const field of ['job_id', 'attempt_id'] as const) {
      if (b[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `is required for kind 'turn'` });
    }
  } else if (b.kind === 'title') {
    if (b.job_id === undefined) ctx.addIssue({ code: 'custom', path: ['job_id'], message: `is required for kind 'title'` });
    else if (b.operation_id !== `${TITLE_OPERATION_PREFIX}${b.job_id}`) {
      ctx.addIssue({ code: 'custom', path: ['operation_id'], message: `must be '${TITLE_OPERATION_PREFIX}<job_id>' for kind 'title'` });
    }
  } else if (!b.operation_id?.startsWith(PROMPT_REWRITE_OPERATION_PREFIX)) {
    ctx.addIssue({ code: 'custom', path: ['operation_id'], message: `must start with '${PROMPT_REWRITE_OPERATION_PREFIX}' for kind 'prompt_rewrite'` });
  }
});

const modelCheckSchema = z.object({ user_id: z.number().int().positive(), model: z.string().min(1).max(200) }).strict();

const renewSchema = z.object({ ttl_seconds: z.number().int().min(10).max(MAX_GRANT_TTL_SECONDS).optional() }).strict();

/** The dispatch token guard (`internal`): 503 when dispatch is not configured, 401 for a wrong token. */
function guard(deps: GatewayDeps): AccessGuard<GatewayState> {
  return accessGuard<GatewayState>('internal', (ctx) => {
    const configured = deps.settings.GATEWAY_GRANT_DISPATCH_TOKEN;
    if (configured === undefined) throw new AppError('service_unavailable', 'Grant dispatch is not configured');
    const client = ctx.state.client;
    if (client) deps.gate.refuseBlocked(client, undefined);
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (!tokenEquals(token, configured)) {
      if (client && token) deps.gate.recordFailure(client, { path: ctx.path, reason: 'invalid_dispatch_token', credential: token });
      throw new AppError('unauthorized', 'Invalid grant dispatch token');
    }
    if (!deps.database.db || !deps.grants) throw new AppError('database_not_configured', 'Database not configured');
  });
}

async function body<T extends z.ZodType>(ctx: { req: IncomingMessage }, schema: T): Promise<z.infer<T>> {
  return validateBody(schema, (await readJsonBody(ctx.req, BODY_LIMIT)) ?? {});
}

/** The scope of an issue request; 404 when the model is not in the registry (an alias resolves to its id). */
function scopeOf(deps: GatewayDeps, input: z.infer<typeof issueSchema>): GrantScope {
  const model = deps.registry.current.byName.get(input.model);
  if (!model) throw new AppError('model_not_found', `The model '${input.model}' does not exist`, { param: 'model' });
  const fixedTtl = { prompt_rewrite: PROMPT_REWRITE_TTL_SECONDS, title: TITLE_TTL_SECONDS, turn: undefined }[input.kind];
  const ttlSeconds = fixedTtl ?? input.ttl_seconds ?? deps.settings.AGENT_GRANT_TTL_SECONDS;
  return {
    userId: input.user_id, model: model.id, kind: input.kind, jobId: input.job_id, attemptId: input.attempt_id, hostId: input.host_id,
    groupId: input.group_id ?? undefined, generation: input.generation ?? undefined, operationId: input.operation_id, ttlSeconds,
  };
}

export function grantDispatchRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const db = (): Db => deps.database.db!;
  const internal = guard(deps);

  router.post('/internal/agent/grants', internal, async (ctx) => {
    const scope = scopeOf(deps, await body(ctx, issueSchema));
    await requireActiveOwner(db(), scope.userId);
    const issued = await issueGrant(db(), scope);
    await deps.grants!.reload(issued.grantId);
    ctx.state.log.info({ event: 'agent_grant_issued', grant_id: issued.grantId, kind: scope.kind, user_id: scope.userId, model: scope.model }, 'inference grant issued');
    ctx.status = 201;
    ctx.body = { grant_id: issued.grantId, token: issued.token, expires_at: issued.expiresAt.toISOString(), model: scope.model };
  });

  // Asked before a job is created: {model: <public id>}, or 404 / 403 / 400 (gateway/agent-grants/owner-model.ts).
  router.post('/internal/agent/models/check', internal, async (ctx) => {
    const input = await body(ctx, modelCheckSchema);
    const model = await checkOwnerModel(db(), deps.registry.current, input.user_id, input.model);
    ctx.body = { model: model.id };
  });

  router.post('/internal/agent/grants/:grantId/renew', internal, async (ctx) => {
    const input = await body(ctx, renewSchema);
    const grantId = ctx.params.grantId ?? '';
    const renewed = await renewGrant(db(), grantId, input.ttl_seconds ?? deps.settings.AGENT_GRANT_TTL_SECONDS);
    await deps.grants!.reload(grantId);
    ctx.body = { grant_id: grantId, expires_at: renewed.expiresAt.toISOString() };
  });

  router.post('/internal/agent/grants/:grantId/revoke', internal, async (ctx) => {
    const grantId = ctx.params.grantId ?? '';
    await revokeGrant(db(), grantId);
    await deps.grants!.reload(grantId);
    ctx.state.log.info({ event: 'agent_grant_revoked', grant_id: grantId }, 'inference grant revoked');
    ctx.body = { grant_id: grantId, revoked: true };
  });
  return router;
}
