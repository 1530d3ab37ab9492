/**
 * Host runner endpoints. `POST /v1/agent/hosts/:hostId/heartbeat` with the host's own
 * credential (`Authorization: Bearer ahc_…`) records `slots_total`, runtime and attestations.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import type { Db } from '../../lib/db';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { heartbeatSchema, recordHeartbeat } from '../../agent/hosts/host-registry';

export function hostsRouter(db: Db): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post('/v1/agent/hosts/:hostId/heartbeat', requireHost(db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const beat = validateBody(heartbeatSchema, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = { host_id: hostId, ...(await recordHeartbeat(db, hostId, beat)) };
  });
  return router;
}
