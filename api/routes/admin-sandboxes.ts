/**
 * Operator routes for sandbox groups (operator auth; docs/sandboxes.md "Lifecycle"):
 * `GET /admin/agent/sandboxes?state=running|<state>|all` lists the inventory (default `running`;
 * `all` includes every state and hidden entries); one `POST /admin/agent/sandboxes/:groupId/<action>`
 * per action, whose body carries what the operator reviewed. Each action goes to the group's
 * workflow (`sandbox:<groupId>`, update-with-start): 404 unknown group, 409 refused with the reason,
 * 400 naming the field of a malformed body, 503 when it cannot be decided now. {@link SANDBOX_ACTIONS}
 * is the one table of actions: the batch route (admin-sandbox-batch.ts) serves every action it lists.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { INVENTORY_STATES, listSandboxes } from '../../agent/sandboxes/sandbox-inventory';
import { sendSandboxAction } from '../../agent/sandboxes/sandbox-delivery';
import { PENDING_STATES } from '../../agent/sandboxes/sandbox-actions';
import type { SandboxAction, SandboxActionAccepted, SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';
import { requireOperator, type AgentState, type OperatorPrincipal } from '../auth/principals';
import { callerAddress } from '../auth/audit-actor';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 16 * 1024;
const generation = z.number().int().min(1);
const containerId = z.string().regex(/^[0-9a-f]{12,64}$/, 'a Docker container id (hex)');

/** Stop idle: the reviewed container, generation and last activity. */
export const stopBodySchema = z.object({ container_id: containerId, generation, last_activity_at: z.iso.datetime({ offset: true }) }).strict();
/** Delete without archive, archive and delete, verify stopped and force delete: the reviewed container and generation. */
export const deleteBodySchema = z.object({ container_id: containerId, generation }).strict();
/** Remove from / restore to the inventory: the reviewed generation. */
export const inventoryBodySchema = z.object({ generation }).strict();

/** What an action's body may carry (each action's schema says which fields it requires). */
export interface SandboxActionBody { generation: number; container_id?: string; last_activity_at?: string }

/** An action's body schema: a strict object (the batch route extends it with `group_id`). */
export type SandboxActionBodySchema = z.ZodObject<z.ZodRawShape, z.core.$strict> & z.ZodType<SandboxActionBody>;

/** Every operator action: its route (`POST /admin/agent/sandboxes/:groupId/<path>`), its name and its body. */
export const SANDBOX_ACTIONS: ReadonlyArray<{ path: string; action: SandboxAction; schema: SandboxActionBodySchema }> = [
  { path: 'stop', action: 'stop', schema: stopBodySchema },
  { path: 'delete', action: 'delete', schema: deleteBodySchema },
  { path: 'force-delete', action: 'force_delete', schema: deleteBodySchema },
  { path: 'archive', action: 'archive_delete', schema: deleteBodySchema },
  { path: 'remove-from-inventory', action: 'remove_from_inventory', schema: inventoryBodySchema },
  { path: 'restore-to-inventory', action: 'restore_to_inventory', schema: inventoryBodySchema },
];

function actorOf(operator: OperatorPrincipal | undefined): string {
  return operator?.userId !== undefined ? `user:${operator.userId}` : 'admin-token';
}

/** The request the workflow receives for `body`, naming the operator and the address the API saw (audit). */
export function sandboxActionRequest(
  action: SandboxAction, body: SandboxActionBody, caller: { operator: OperatorPrincipal | undefined; remoteAddress: string | undefined },
): SandboxActionRequest {
  return {
    action, generation: body.generation, actor: actorOf(caller.operator),
    ...(caller.remoteAddress !== undefined ? { actorIp: caller.remoteAddress } : {}),
    ...(body.container_id !== undefined ? { containerId: body.container_id } : {}),
    ...(body.last_activity_at !== undefined ? { lastActivityAt: body.last_activity_at } : {}),
  };
}

/** The answer to an accepted action: 202 while the host still has work (a pending state), else 200. */
export function acceptedAnswer(accepted: SandboxActionAccepted): { status: 200 | 202; body: { group_id: string; action: SandboxAction; state: SandboxState; hidden: boolean } } {
  return {
    status: PENDING_STATES.includes(accepted.state) ? 202 : 200,
    body: { group_id: accepted.groupId, action: accepted.action, state: accepted.state, hidden: accepted.hidden },
  };
}

export function adminSandboxesRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/sandboxes', operator, async (ctx) => {
    const raw = ctx.query.state ?? 'running';
    const state = typeof raw === 'string' && (raw === 'all' || (INVENTORY_STATES as readonly string[]).includes(raw)) ? raw : undefined;
    if (state === undefined) {
      throw new AppError('invalid_request', `Invalid query parameter 'state': use all or one of ${INVENTORY_STATES.join(', ')}`, { param: 'state' });
    }
    ctx.body = { sandboxes: await listSandboxes(deps.db, { state: state as (typeof INVENTORY_STATES)[number] | 'all', staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS }) };
  });

  for (const { path, action, schema } of SANDBOX_ACTIONS) {
    router.post(`/admin/agent/sandboxes/:groupId/${path}`, operator, async (ctx) => {
      const body = validateBody(schema, await readJsonBody(ctx.req, BODY_LIMIT));
      const request = sandboxActionRequest(action, body, { operator: ctx.state.operator, remoteAddress: callerAddress(ctx) ?? undefined });
      const groupId = ctx.params.groupId ?? '';
      const accepted = await sendSandboxAction({ db: deps.db, temporal: deps.temporal, settings: deps.settings, probeTemporalSeconds: deps.settings.TEMPORAL_CALL_TIMEOUT_SECONDS }, groupId, request);
      ctx.state.log.info({ event: 'agent_sandbox_action_accepted', group_id: groupId, action, state: accepted.state, operator: ctx.state.operator }, 'sandbox action accepted');
      const answer = acceptedAnswer(accepted);
      ctx.status = answer.status;
      ctx.body = answer.body;
    });
  }
  for (const { path, schema } of SANDBOX_ACTIONS) {
    documentRoute(router, 'POST', `/admin/agent/sandboxes/:groupId/${path}`, { body: schema, success: 202, statuses: [409, 503], summary: `Sandbox action \`${path}\` on a group.` });
  }
  return router;
}
