/**
 * `POST /admin/agent/sandboxes/batch` (operator auth; batch actions run up to four requests
 * at once; docs/sandboxes.md "Batch actions"): one operator action on up to 100 groups of the
 * inventory. Body `{action, items: [{group_id, …the single route's body}]}`: the actions and their
 * item fields come from the single routes' table ({@link SANDBOX_ACTIONS}), so an action added there
 * is served here too. Each item goes through the single route's path (`sendSandboxAction`), at most
 * {@link BATCH_CONCURRENCY} at once, and the answer is 200 with one result per item in request
 * order, each with the status and body its single route would have answered. A malformed body,
 * a duplicate group id or an unknown field is a 400 naming the field, and then no item runs.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { mapBounded } from '../../lib/bounded-map';
import { AppError, errorTypeOf, type ErrorCode } from '../../lib/errors';
import { toAppError } from '../../lib/http/error-middleware';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { Logger } from '../../lib/logger';
import { sendSandboxAction } from '../../agent/sandboxes/sandbox-delivery';
import { requireTemporal } from '../../lib/temporal';
import type { SandboxAction, SandboxActionAccepted, SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';
import { requireOperator, type AgentState, type OperatorPrincipal } from '../auth/principals';
import { callerAddress } from '../auth/audit-actor';
import type { ApiDeps } from '../deps';
import { acceptedAnswer, SANDBOX_ACTIONS, sandboxActionRequest, type SandboxActionBody, type SandboxActionBodySchema } from './admin-sandboxes';

/** Items a batch may carry. */
export const BATCH_MAX_ITEMS = 100;

/** Items delivered at once (up to four requests run at a time). */
export const BATCH_CONCURRENCY = 4;

const BODY_LIMIT = 128 * 1024;

/** One item: the group and what its single route's body carries. */
export type BatchItem = SandboxActionBody & { group_id: string };

/** The result of one item: the status and body its single route would have answered. */
export type BatchItemResult =
  | { group_id: string; status: 200 | 202; action: SandboxAction; state: SandboxState; hidden: boolean }
  | { group_id: string; status: number; error: { type: string; code: ErrorCode; message: string } };

/** An item's schema: the action's body schema (strict) with the group id added. */
function itemSchemaOf(schema: SandboxActionBodySchema): z.ZodType<BatchItem> {
  // zod carries no field types through the table's `ZodRawShape`; extend keeps the body's fields and strictness.
  return schema.extend({ group_id: z.string().min(1).max(256) }) as unknown as z.ZodType<BatchItem>;
}

/** The batch body: one variant per action of the single routes' table, told apart by `action`. */
export function batchBodySchema(): z.ZodType<{ action: SandboxAction; items: BatchItem[] }> {
  const variants = SANDBOX_ACTIONS.map(({ action, schema }) => z.object({
    action: z.literal(action),
    items: z.array(itemSchemaOf(schema)).min(1).max(BATCH_MAX_ITEMS),
  }).strict());
  return z.discriminatedUnion('action', variants as [typeof variants[number], ...Array<typeof variants[number]>]);
}

/** Throws the 400 naming the second occurrence of a group id. */
function refuseDuplicates(items: readonly BatchItem[]): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (seen.has(item.group_id)) {
      throw new AppError('invalid_request', `Invalid field 'items.${index}.group_id': the group ${item.group_id} is already in the batch`, { param: `items.${index}.group_id` });
    }
    seen.add(item.group_id);
  });
}

export interface SandboxBatchDeps {
  /** Sends one action, as the single route does (`sendSandboxAction`); injectable for tests. */
  deliver: (groupId: string, request: SandboxActionRequest) => Promise<SandboxActionAccepted>;
  log: Logger;
}

/**
 * Delivers every item, at most {@link BATCH_CONCURRENCY} at once, and answers one result per item in
 * the items' order. A delivery's error becomes that item's result (the single route's status and
 * message; an unexpected fault is a 500 with the generic message, logged), never the batch's.
 */
export async function runSandboxBatch(
  deps: SandboxBatchDeps, action: SandboxAction, items: readonly BatchItem[], caller: { operator: OperatorPrincipal | undefined; remoteAddress: string | undefined },
): Promise<BatchItemResult[]> {
  return mapBounded(items, BATCH_CONCURRENCY, async (item): Promise<BatchItemResult> => {
    try {
      const accepted = await deps.deliver(item.group_id, sandboxActionRequest(action, item, caller));
      deps.log.info({ event: 'agent_sandbox_action_accepted', group_id: item.group_id, action, state: accepted.state, operator: caller.operator, batch: true }, 'sandbox action accepted');
      const answer = acceptedAnswer(accepted);
      return { status: answer.status, ...answer.body };
    } catch (thrown) {
      const err = toAppError(thrown);
      if (err.code === 'internal') deps.log.error({ err: thrown, group_id: item.group_id, action }, 'sandbox batch item failed');
      return { group_id: item.group_id, status: err.status, error: { type: errorTypeOf(err.status), code: err.code, message: err.expose ? err.message : 'Internal server error' } };
    }
  });
}

export function adminSandboxBatchRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const schema = batchBodySchema();
  const delivery = { db: deps.db, temporal: deps.temporal, settings: deps.settings };

  router.post('/admin/agent/sandboxes/batch', operator, async (ctx) => {
    const body = validateBody(schema, await readJsonBody(ctx.req, BODY_LIMIT));
    refuseDuplicates(body.items);
    // One probe for the whole batch: with Temporal away every item would wait out its own deadline.
    await requireTemporal(deps.temporal, deps.settings.TEMPORAL_CALL_TIMEOUT_SECONDS, 'no action of the batch was carried out and nothing changed');
    const results = await runSandboxBatch(
      { deliver: (groupId, request) => sendSandboxAction(delivery, groupId, request), log: ctx.state.log },
      body.action, body.items, { operator: ctx.state.operator, remoteAddress: callerAddress(ctx) ?? undefined },
    );
    ctx.body = { action: body.action, results };
  });
  documentRoute(router, 'POST', '/admin/agent/sandboxes/batch', { body: schema, summary: 'One sandbox action on many groups; a result per item.' });
  return router;
}
