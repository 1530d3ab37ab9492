/**
 * Owners' chat deletion (docs/chat-deletion.md, docs/agent-api.md), owner
 * auth, another owner's or an unknown chat → 404:
 *
 * - `DELETE /v1/agent/jobs/:jobId` soft-deletes: the chat leaves every list and view, new turns
 *   are refused, queued turns are cancelled and a running turn is stopped. 200; repeating it is 200.
 * - `POST /v1/agent/jobs/:jobId/restore` undoes a soft delete (409 when not deleted or when
 *   permanent deletion was requested). Body: none or `{}`.
 * - `DELETE /v1/agent/jobs/:jobId?permanent=true` requests permanent deletion of a soft-deleted
 *   chat (409 otherwise): 202 with the deletion request; the deletion sweep carries it out within
 *   about a minute. Repeating it answers the same request (200).
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { requestPermanentDeletion, restoreChat, softDeleteChat } from '../../agent/deletion/chat-deletion';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import { findOwnedJob } from '../../agent/jobs/job-store';
import { jobView } from '../../agent/jobs/job-views';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';

const BODY_LIMIT = 1024;

export const deleteQuerySchema = z.object({ permanent: z.enum(['true', 'false']).optional() }).strict();
export const restoreBodySchema = z.object({}).strict();

export function chatDeletionRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>({ prefix: '/v1/agent' });
  const delivery = new ChatDelivery(deps.temporal, deps.settings, deps.log);
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.delete('/jobs/:jobId', owner, async (ctx) => {
    const { userId } = ownerOf(ctx.state);
    const query = validateBody(deleteQuerySchema, ctx.query);
    const jobId = ctx.params.jobId ?? '';
    if (query.permanent === 'true') {
      const { created, ...request } = await requestPermanentDeletion(deps.db, { jobId, ownerId: userId });
      ctx.state.log.info({ event: 'agent_chat_deletion_requested', job_id: jobId, request_id: request.request_id, created }, 'permanent chat deletion requested');
      ctx.status = created ? 202 : 200;
      ctx.body = { job_id: jobId, deleted: true, permanent_deletion: request };
      return;
    }
    const deleted = await softDeleteChat(deps.db, { jobId, ownerId: userId });
    const chat = { jobId: deleted.job_id, ownerId: userId };
    // The records already say it: the workflow learns it now, or the turn runs to its end.
    if (deleted.stopping_turn !== null) await delivery.cancelRunning(chat, deleted.stopping_turn);
    else if (deleted.cancelled_turns.length > 0) await delivery.wake(chat);
    ctx.body = { job_id: deleted.job_id, deleted: true, deleted_at: deleted.deleted_at, cancelled_turns: deleted.cancelled_turns, stopping_turn: deleted.stopping_turn };
  });

  router.post('/jobs/:jobId/restore', owner, async (ctx) => {
    const { userId } = ownerOf(ctx.state);
    const body = await readJsonBody(ctx.req, BODY_LIMIT);
    if (body !== undefined) validateBody(restoreBodySchema, body);
    const jobId = ctx.params.jobId ?? '';
    await restoreChat(deps.db, { jobId, ownerId: userId });
    ctx.body = await jobView(deps.db, await findOwnedJob(deps.db, jobId, userId));
  });

  documentRoute(router, 'DELETE', '/jobs/:jobId', { query: deleteQuerySchema, summary: 'Deletes a chat (restorable unless permanent).' });
  documentRoute(router, 'POST', '/jobs/:jobId/restore', { body: restoreBodySchema, summary: 'Restores a deleted chat.' });
  return router;
}
