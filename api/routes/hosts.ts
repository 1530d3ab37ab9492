/**
 * Host runner endpoints. `POST /v1/agent/hosts/:hostId/heartbeat` with the host's own
 * credential (`Authorization: Bearer ahc_…`) records `slots_total`, runtime and attestations.
 */
import Router from '@koa/router';
import type { Db } from '../../lib/db';
import { bearerToken, readJsonBody, validateBody } from '../../lib/http/json-body';
import type { RequestState } from '../../lib/http/request-context';
import { authenticateHost, heartbeatSchema, recordHeartbeat } from '../hosts/host-registry';

export function hostsRouter(db: Db): Router<RequestState> {
  const router = new Router<RequestState>();
  router.post('/v1/agent/hosts/:hostId/heartbeat', async (ctx) => {
    const hostId = await authenticateHost(db, ctx.params.hostId ?? '', bearerToken(ctx.get('authorization') || undefined));
    const beat = validateBody(heartbeatSchema, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = { host_id: hostId, ...(await recordHeartbeat(db, hostId, beat)) };
  });
  return router;
}
