/**
 * The operator's identity powers (docs/identity.md "Signing keys", "Impersonation"), audited in
 * the agent audit log under the category `identity` (docs/agent-audit.md):
 * - `GET /admin/agent/signing-keys`: the key signing now and every stored key (never a secret);
 * - `POST /admin/agent/signing-keys/rotate`: a new key signs from a moment later; the superseded one
 *   verifies until the longest token it could have signed has expired;
 * - `POST /admin/agent/users/:userId/impersonate`: a short-lived access token acting as the user,
 *   returned in the `X-Impersonation-Token` response header (never the body). Needs the
 *   operator's own sign-in (not `ADMIN_TOKEN`): the token ends with it;
 * - `POST /admin/agent/impersonations/:id/end`: ends one early.
 */
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { IMPERSONATION_TTL_SECONDS } from '../../lib/identity/access-tokens';
import { readAccount } from '../../lib/identity/accounts';
import { accountState } from '../../lib/identity/credential-state';
import { endImpersonation, recordImpersonation, signInLive } from '../../lib/identity/impersonation';
import { BOOTSTRAP_KID, listSigningKeys, rotateSigningKey } from '../../lib/identity/signing-keys';
import { recordAudit } from '../../agent/audit/audit-log';
import { operatorAudit } from '../auth/audit-actor';
import { requireOperator, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 16 * 1024;
const reasonBody = z.object({ reason: z.string().trim().min(1).max(1000).optional() }).strict();
export const IMPERSONATION_HEADER = 'X-Impersonation-Token';

function positiveId(value: string | undefined, name: string): number {
  const id = Number(value);
  if (!/^[1-9]\d{0,17}$/.test(value ?? '') || !Number.isSafeInteger(id)) throw new AppError('invalid_request', `Invalid path parameter '${name}': must be a positive integer`, { param: name });
  return id;
}

/** The operator's own account and sign-in; 403 for `ADMIN_TOKEN` or a token that names no sign-in. */
function signedInOperator(ctx: ParameterizedContext<AgentState>): { userId: number; sessionId: string } {
  const operator = ctx.state.operator;
  if (operator?.userId === undefined || !operator.sessionId) {
    throw new AppError('forbidden', 'Impersonation needs an operator signed in with their own account (an access token from POST /auth/login), so that it ends with that sign-in; ADMIN_TOKEN cannot impersonate');
  }
  return { userId: operator.userId, sessionId: operator.sessionId };
}

export function adminIdentityRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/signing-keys', operator, async (ctx) => {
    ctx.body = { signing_kid: deps.tokens.ring.signingKey().kid ?? BOOTSTRAP_KID, rotatable: deps.tokens.ring.rotatable, data: await listSigningKeys(deps.db) };
  });

  router.post('/admin/agent/signing-keys/rotate', operator, async (ctx) => {
    const body = validateBody(reasonBody, (await readJsonBody(ctx.req, BODY_LIMIT)) ?? {});
    if (!deps.tokens.ring.rotatable) throw new AppError('service_unavailable', 'Signing keys cannot rotate: AUTH_JWT_SECRET is not configured on the control-plane API');
    const by = operatorAudit(ctx);
    const rotation = await rotateSigningKey(deps.tokens.ring, {
      maxTokenLifetimeSeconds: deps.tokens.maxLifetimeSeconds,
      activationDelayMs: 2 * deps.settings.AUTH_SIGNING_KEY_SYNC_SECONDS * 1000,
      byUserId: by.actor.type === 'user' ? by.actor.userId : null,
      within: async (trx, result) => {
        await recordAudit(trx, {
          ...by, category: 'identity', action: 'agent.signing_key.rotate', target: { type: 'signing_key', id: result.kid },
          reason: body.reason ?? null, outcome: 'succeeded', details: { ...result },
        });
      },
    });
    ctx.state.log.info({ event: 'signing_key_rotated', kid: rotation.kid, superseded: rotation.superseded.kid }, 'signing key rotated');
    ctx.body = rotation;
  });

  router.post('/admin/agent/users/:userId/impersonate', operator, async (ctx) => {
    const admin = signedInOperator(ctx);
    const userId = positiveId(ctx.params.userId, 'userId');
    const body = validateBody(reasonBody, (await readJsonBody(ctx.req, BODY_LIMIT)) ?? {});
    if (userId === admin.userId) throw new AppError('invalid_request', 'You cannot impersonate yourself', { param: 'userId' });
    if (!(await signInLive(deps.db, admin.userId, admin.sessionId))) throw new AppError('unauthorized', 'Your sign-in has ended; log in again');
    const user = await readAccount(deps.db, userId);
    if (!user || user.userDeleted) throw new AppError('not_found', `No user ${userId}`);
    if (accountState(user) !== 'valid') throw new AppError('conflict', `User ${userId} is suspended: a suspended account cannot be impersonated`);
    if (user.role === 'admin' || user.permissions.includes('agent.admin')) {
      throw new AppError('forbidden', 'Administrators and operators cannot be impersonated (one operator never acts under another\'s name)');
    }
    const by = operatorAudit(ctx);
    const started = await deps.db.transaction(async (trx) => {
      const row = await recordImpersonation(trx, { userId, adminUserId: admin.userId, adminSession: admin.sessionId, reason: body.reason ?? null, actorIp: by.actorIp ?? null, ttlSeconds: IMPERSONATION_TTL_SECONDS });
      await recordAudit(trx, {
        ...by, category: 'identity', action: 'agent.impersonation.start', target: { type: 'user', id: String(userId) }, reason: body.reason ?? null,
        outcome: 'succeeded', details: { impersonation_id: row.id, user_id: userId, expires_at: row.expiresAt.toISOString() },
      });
      return row;
    });
    const token = deps.tokens.issueImpersonation({ id: userId, role: user.role }, { id: started.id, adminUserId: admin.userId, adminSession: admin.sessionId }, IMPERSONATION_TTL_SECONDS);
    ctx.state.log.info({ event: 'impersonation_started', impersonation_id: started.id, user_id: userId, admin_user_id: admin.userId }, 'impersonation started');
    ctx.set(IMPERSONATION_HEADER, token);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 201;
    ctx.body = { impersonation_id: started.id, user_id: userId, expires_at: started.expiresAt.toISOString(), token_header: IMPERSONATION_HEADER };
  });

  router.post('/admin/agent/impersonations/:id/end', operator, async (ctx) => {
    const id = positiveId(ctx.params.id, 'id');
    const by = operatorAudit(ctx);
    const ended = await deps.db.transaction(async (trx) => {
      const row = await endImpersonation(trx, id);
      if (row) {
        await recordAudit(trx, {
          ...by, category: 'identity', action: 'agent.impersonation.end', target: { type: 'user', id: String(row.user_id) },
          outcome: 'succeeded', details: { impersonation_id: id, admin_user_id: row.admin_user_id },
        });
      }
      return row;
    });
    if (!ended) throw new AppError('not_found', `No impersonation ${id} in progress`);
    ctx.body = { impersonation_id: id, ended: true };
  });

  documentRoute(router, 'GET', '/admin/agent/signing-keys', { summary: 'The signing key in use and every stored key (no secrets).' });
  documentRoute(router, 'POST', '/admin/agent/signing-keys/rotate', { body: reasonBody, statuses: [503], summary: 'Rotates the access-token signing key (the old one verifies until its tokens expire).' });
  documentRoute(router, 'POST', '/admin/agent/users/:userId/impersonate', { body: reasonBody, success: 201, statuses: [409], summary: 'Signs in as a user for support: a 15-minute token in the X-Impersonation-Token header.' });
  documentRoute(router, 'POST', '/admin/agent/impersonations/:id/end', { noBody: true, summary: 'Ends an impersonation early.' });
  return router;
}
