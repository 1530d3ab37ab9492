/**
 * The grant dispatch endpoints the control plane calls (docs/agent-grants.md):
 * `POST /internal/agent/grants` (issue), `/internal/agent/grants/:grantId/renew` and `/revoke`,
 * and `POST /internal/agent/models/check` (may this owner run agent turns on this model?); paths
 * and body schemas are the contract in lib/contracts/grant-dispatch.ts, shared with the client.
 * Guarded by `GATEWAY_GRANT_DISPATCH_TOKEN` (constant-time comparison): unset → 503
 * `Grant dispatch is not configured`, wrong or missing → 401 (counted by the auth-failure
 * blocklist); then, without a database, 500 `Database not configured`.
 */
import type { IncomingMessage } from 'node:http';
import type Router from '@koa/router';
import type { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { bearerToken, readJsonBody, validateBody } from '../../lib/http/json-body';
import { tokenEquals } from '../../lib/identity/constant-time';
import { accessGuard, createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import type { GatewayDeps } from '../deps';
import type { GatewayState } from '../surfaces/state';
import { grantIssue, grantRenew, grantRevoke, modelCheck, type ValidIssueRequest } from '../../lib/contracts/grant-dispatch';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import { issueGrant, renewGrant, requireActiveOwner, revokeGrant, PROMPT_REWRITE_TTL_SECONDS, TITLE_TTL_SECONDS, type GrantScope } from './grant-store';
import { checkOwnerModel } from './owner-model';

const BODY_LIMIT = 16 * 1024;

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
function scopeOf(deps: GatewayDeps, input: ValidIssueRequest): GrantScope {
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

  router.post(grantIssue.route, internal, async (ctx) => {
    const scope = scopeOf(deps, await body(ctx, grantIssue.request));
    await requireActiveOwner(db(), scope.userId);
    const issued = await issueGrant(db(), scope);
    await deps.grants!.reload(issued.grantId);
    ctx.state.log.info({ event: 'agent_grant_issued', grant_id: issued.grantId, kind: scope.kind, user_id: scope.userId, model: scope.model }, 'inference grant issued');
    ctx.status = 201;
    ctx.body = { grant_id: issued.grantId, token: issued.token, expires_at: issued.expiresAt.toISOString(), model: scope.model } satisfies ResponseOf<typeof grantIssue>;
  });

  // Asked before a job is created: {model: <public id>}, or 404 / 403 / 400 (gateway/agent-grants/owner-model.ts).
  router.post(modelCheck.route, internal, async (ctx) => {
    const input = await body(ctx, modelCheck.request);
    const model = await checkOwnerModel(db(), deps.registry.current, input.user_id, input.model);
    ctx.body = { model: model.id } satisfies ResponseOf<typeof modelCheck>;
  });

  router.post(grantRenew.route, internal, async (ctx) => {
    const input = await body(ctx, grantRenew.request);
    const grantId = ctx.params.grantId ?? '';
    const renewed = await renewGrant(db(), grantId, input.ttl_seconds ?? deps.settings.AGENT_GRANT_TTL_SECONDS);
    await deps.grants!.reload(grantId);
    ctx.body = { grant_id: grantId, expires_at: renewed.expiresAt.toISOString() } satisfies ResponseOf<typeof grantRenew>;
  });

  documentEndpoint(router, grantIssue, { success: 201, statuses: [404] });
  documentEndpoint(router, modelCheck);
  documentEndpoint(router, grantRenew);
  documentEndpoint(router, grantRevoke, { noBody: true });

  // The revoke body is not read (the contract has no fields).
  router.post(grantRevoke.route, internal, async (ctx) => {
    const grantId = ctx.params.grantId ?? '';
    await revokeGrant(db(), grantId);
    await deps.grants!.reload(grantId);
    ctx.state.log.info({ event: 'agent_grant_revoked', grant_id: grantId }, 'inference grant revoked');
    ctx.body = { grant_id: grantId, revoked: true } satisfies ResponseOf<typeof grantRevoke>;
  });
  return router;
}
