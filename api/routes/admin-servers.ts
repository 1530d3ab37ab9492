/**
 * Operator routes for server allocations (`DELETE /admin/agent/servers/<allocation_id>`
 * `{expected_revision: N}`, operator auth; docs/agent-hosts.md "Server allocations"):
 * `POST /admin/agent/servers` `{host_id, label?}` allocates an enrolled host;
 * `GET /admin/agent/servers` lists allocations (query `state`, `before`, `limit`);
 * `GET /admin/agent/servers/:allocation_id` shows one; `DELETE /admin/agent/servers/:allocation_id`
 * releases one whose current revision is `expected_revision` (409 otherwise: refresh): its host is
 * removed through the guarded removal (200, released) or drains (202, releasing). Changes and
 * refusals are audited, category `servers` (docs/agent-audit.md).
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { AppError } from '../../lib/errors';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import {
  allocationIdOf, createAllocation, createAllocationSchema, getAllocation, listAllocations, listAllocationsQuerySchema,
} from '../../agent/servers/server-allocations';
import { releaseAllocation } from '../../agent/servers/allocation-release';
import type { ApiDeps } from '../deps';

/** Largest revision a release may name (the column is a PostgreSQL integer). */
const MAX_REVISION = 2_147_483_647;

/** `{expected_revision: N}`: the revision the operator last read; nothing else. */
export const releaseBodySchema = z.object({
  expected_revision: z.number({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be an integer') })
    .int('must be an integer').min(1, 'must be at least 1').max(MAX_REVISION, `must be at most ${MAX_REVISION}`),
}).strict();

const BODY_LIMIT = 16 * 1024;

export function adminServersRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const delivery = { db: deps.db, temporal: deps.temporal, settings: deps.settings };

  router.post('/admin/agent/servers', operator, async (ctx) => {
    const body = validateBody(createAllocationSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const view = await createAllocation(deps.db, { hostId: body.host_id, label: body.label ?? null, by: operatorAudit(ctx) });
    ctx.state.log.info({ event: 'agent_server_allocated', allocation_id: view.allocation_id, host_id: view.host_id, operator: ctx.state.operator }, 'server allocated');
    ctx.status = 201;
    ctx.body = view;
  });

  router.get('/admin/agent/servers', operator, async (ctx) => {
    for (const [name, value] of Object.entries(ctx.query)) {
      if (Array.isArray(value)) throw new AppError('invalid_request', `Invalid query parameter '${name}': give it once`, { param: name });
    }
    ctx.body = await listAllocations(deps.db, validateBody(listAllocationsQuerySchema, ctx.query));
  });

  router.get('/admin/agent/servers/:allocation_id', operator, async (ctx) => {
    ctx.body = await getAllocation(deps.db, allocationIdOf(ctx.params.allocation_id));
  });

  router.delete('/admin/agent/servers/:allocation_id', operator, async (ctx) => {
    const allocationId = allocationIdOf(ctx.params.allocation_id);
    const { expected_revision: expectedRevision } = validateBody(releaseBodySchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const view = await releaseAllocation(delivery, allocationId, expectedRevision, operatorAudit(ctx));
    const released = view.state === 'released';
    ctx.state.log.info({
      event: released ? 'agent_server_released' : 'agent_server_release_requested', allocation_id: allocationId, host_id: view.host_id,
      revision: view.revision, held: view.held, operator: ctx.state.operator,
    }, released ? 'server allocation released' : 'server allocation releasing while its host drains');
    ctx.status = released ? 200 : 202;
    ctx.body = view;
  });
  documentRoute(router, 'POST', '/admin/agent/servers', { body: createAllocationSchema, success: 201, summary: 'Allocates a server.' });
  documentRoute(router, 'GET', '/admin/agent/servers', { query: listAllocationsQuerySchema, summary: 'Server allocations.' });
  documentRoute(router, 'DELETE', '/admin/agent/servers/:allocation_id', { body: releaseBodySchema, statuses: [409], summary: 'Releases an allocation at the expected revision.' });
  return router;
}
