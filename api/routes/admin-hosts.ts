/**
 * Operator routes for execution hosts (spec 4.4, operator auth):
 * `GET /admin/agent/runner-hosts` lists hosts with their slot state;
 * `PUT /admin/agent/runner-hosts/:host/slots` `{slots: 2..128 | null}` saves a host's slots;
 * `DELETE /admin/agent/runner-hosts/:host` removes a host that holds nothing (else 409).
 * Changes and refused removals are audited (agent/audit, docs/agent-audit.md).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { z } from 'zod';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import { getHost, listHosts, removeHost, saveHostSlots } from '../../agent/hosts/host-admin';
import type { HostViewContext } from '../../agent/hosts/host-view';
import type { ApiDeps } from '../app';

/** `{slots: N}` (integer 2..128) or `{slots: null}` for the host's environment default. */
export const slotsBodySchema = z.object({
  slots: z.number().int().min(2).max(128).nullable(),
}).strict();

export function adminHostsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const context: HostViewContext = { staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, defaultSlots: deps.settings.AGENT_HOST_SLOTS };
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/runner-hosts', operator, async (ctx) => {
    ctx.body = { hosts: await listHosts(deps.db, context) };
  });

  router.put('/admin/agent/runner-hosts/:host/slots', operator, async (ctx) => {
    const hostId = ctx.params.host ?? '';
    const { slots } = validateBody(slotsBodySchema, await readJsonBody(ctx.req, 16 * 1024));
    const { previous } = await saveHostSlots(deps.db, hostId, slots, operatorAudit(ctx));
    const view = await getHost(deps.db, hostId, context);
    ctx.state.log.info({
      event: 'agent_host_slots_changed', host_id: hostId, slots_previous: previous, slots_saved: slots,
      slots_reported: view.slots.reported, slots_effective: view.slots.effective, operator: ctx.state.operator,
    }, 'host slots saved');
    ctx.body = view;
  });

  router.delete('/admin/agent/runner-hosts/:host', operator, async (ctx) => {
    const hostId = ctx.params.host ?? '';
    const { tombstone } = await removeHost(deps.db, hostId, operatorAudit(ctx));
    ctx.state.log.info({ event: 'agent_host_removed', host_id: hostId, tombstone, operator: ctx.state.operator }, 'host removed');
    ctx.body = { host_id: hostId, removed: true };
  });
  return router;
}
