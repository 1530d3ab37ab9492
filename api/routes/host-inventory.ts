/**
 * `POST /v1/agent/hosts/:hostId/inventory` (host credential; contract `hostInventory` of
 * lib/contracts/host-api.ts): the host's managed containers with a reading, reconciled with
 * PostgreSQL (agent/sandboxes/reconciler.ts, docs/sandboxes.md "Reconciler"). The answer names the
 * orphan containers past their grace period, which the host removes.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import * as hostApi from '../../lib/contracts/host-api';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import { reconcileHostInventory } from '../../agent/sandboxes/reconciler';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

export function hostInventoryRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post(hostApi.hostInventory.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const report = validateBody(hostApi.hostInventory.request, await readJsonBody(ctx.req, hostApi.MAX_INVENTORY_BODY_BYTES));
    const result = await reconcileHostInventory(deps.db, { hostId, report, graceSeconds: deps.settings.AGENT_ORPHAN_GRACE_SECONDS, log: ctx.state.log });
    ctx.body = {
      remove: result.remove, observed: result.observed, orphans: result.orphans, marked_dead: result.markedDead.length,
    } satisfies ResponseOf<typeof hostApi.hostInventory>;
  });
  documentEndpoint(router, hostApi.hostInventory);
  return router;
}
