/**
 * Operator routes for execution hosts (operator auth; docs/agent-hosts.md):
 * `GET /admin/agent/runner-hosts` lists hosts with their slot state;
 * `PUT /admin/agent/runner-hosts/:host/slots` `{slots: 2..128 | null}` saves a host's slots;
 * `DELETE /admin/agent/runner-hosts/:host` removes a host that holds nothing (200) or starts its
 * drain (202, removed once nothing holds it), and refuses (409) a host with a server allocation,
 * which leaves through `DELETE /admin/agent/servers/<id>` (agent/servers);
 * `POST /admin/agent/runner-hosts/:host/cancel-removal` takes a pending removal back (not one a
 * release started). Each change goes to the host's workflow (`host:<hostId>`,
 * update-with-start): 404 unknown host, 409 refused with the reason, 503 when it cannot be decided
 * now. Changes and refusals are audited (agent/audit, docs/agent-audit.md).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import { getHost, listHosts } from '../../agent/hosts/host-admin';
import { sendHostAction } from '../../agent/hosts/host-delivery';
import { refuseAllocatedHost } from '../../agent/servers/host-allocations';
import type { HostViewContext } from '../../agent/hosts/host-view';
import type { HostActionBy } from '../../workflows/definitions/host';
import type { ApiDeps } from '../deps';

/** `{slots: N}` (integer 2..128) or `{slots: null}` for the host's environment default. */
export const slotsBodySchema = z.object({
  slots: z.number().int().min(2).max(128).nullable(),
}).strict();

export function adminHostsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const context: HostViewContext = { staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, defaultSlots: deps.settings.AGENT_HOST_SLOTS };
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const delivery = { db: deps.db, temporal: deps.temporal, settings: deps.settings };
  const byOf = (ctx: Parameters<typeof operatorAudit>[0]): HostActionBy => {
    const by = operatorAudit(ctx);
    return { actor: by.actor, actorIp: by.actorIp ?? null };
  };

  router.get('/admin/agent/runner-hosts', operator, async (ctx) => {
    ctx.body = { hosts: await listHosts(deps.db, context) };
  });

  router.put('/admin/agent/runner-hosts/:host/slots', operator, async (ctx) => {
    const hostId = ctx.params.host ?? '';
    const { slots } = validateBody(slotsBodySchema, await readJsonBody(ctx.req, 16 * 1024));
    const { previous } = await sendHostAction(delivery, hostId, { action: 'change_slots', slots, by: byOf(ctx) });
    const view = await getHost(deps.db, hostId, context);
    ctx.state.log.info({
      event: 'agent_host_slots_changed', host_id: hostId, slots_previous: previous, slots_saved: slots,
      slots_reported: view.slots.reported, slots_effective: view.slots.effective, operator: ctx.state.operator,
    }, 'host slots saved');
    ctx.body = view;
  });

  router.delete('/admin/agent/runner-hosts/:host', operator, async (ctx) => {
    const hostId = ctx.params.host ?? '';
    await refuseAllocatedHost(deps.db, hostId, 'remove', byOf(ctx));
    const answer = await sendHostAction(delivery, hostId, { action: 'remove', by: byOf(ctx) });
    if (answer.state === 'removed') {
      ctx.state.log.info({ event: 'agent_host_removed', host_id: hostId, tombstone: answer.tombstone, operator: ctx.state.operator }, 'host removed');
      ctx.body = { host_id: hostId, removed: true };
      return;
    }
    if (!answer.alreadyRequested) {
      ctx.state.log.info({ event: 'agent_host_removal_requested', host_id: hostId, held: answer.held, operator: ctx.state.operator }, 'host draining before removal');
    }
    ctx.status = 202;
    ctx.body = { host_id: hostId, removed: false, state: 'draining', removal_requested_at: answer.requestedAt, held: answer.held };
  });

  router.post('/admin/agent/runner-hosts/:host/cancel-removal', operator, async (ctx) => {
    const hostId = ctx.params.host ?? '';
    await refuseAllocatedHost(deps.db, hostId, 'cancel_removal', byOf(ctx));
    await sendHostAction(delivery, hostId, { action: 'cancel_removal', by: byOf(ctx) });
    ctx.state.log.info({ event: 'agent_host_removal_cancelled', host_id: hostId, operator: ctx.state.operator }, 'host removal cancelled');
    ctx.body = await getHost(deps.db, hostId, context);
  });
  documentRoute(router, 'PUT', '/admin/agent/runner-hosts/:host/slots', { body: slotsBodySchema, summary: "Sets a host's slot count." });
  documentRoute(router, 'DELETE', '/admin/agent/runner-hosts/:host', { success: 202, summary: 'Starts removing a host (drains it first).' });
  documentRoute(router, 'POST', '/admin/agent/runner-hosts/:host/cancel-removal', { noBody: true, summary: "Cancels a host's removal." });
  return router;
}
