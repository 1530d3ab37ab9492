/**
 * Host runner endpoints. `POST /v1/agent/hosts/:hostId/heartbeat` with the host's own
 * credential (`Authorization: Bearer ahc_…`) records `slots_total`, runtime and attestations
 * (the contract: lib/contracts/host-api.ts).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import type { Db } from '../../lib/db';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { recordHeartbeat } from '../../agent/hosts/host-registry';
import * as hostApi from '../../lib/contracts/host-api';
import type { ResponseOf } from '../../lib/contracts/endpoint';

export function hostsRouter(db: Db): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post(hostApi.hostHeartbeat.route, requireHost(db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const beat = validateBody(hostApi.hostHeartbeat.request, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = { host_id: hostId, ...(await recordHeartbeat(db, hostId, beat)) } satisfies ResponseOf<typeof hostApi.hostHeartbeat>;
  });
  return router;
}
