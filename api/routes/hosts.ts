/**
 * Host runner endpoints. `POST /v1/agent/hosts/:hostId/heartbeat` with the host's own
 * credential (`Authorization: Bearer ahc_…`) records `slots_total`, runtime and attestations
 * (the contract: lib/contracts/host-api.ts), then tells the host workflow what it waits for (back
 * online, new slots reported) without waiting for Temporal (agent/hosts/host-delivery.ts).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { recordHeartbeat } from '../../agent/hosts/host-registry';
import { HostHeartbeatNotifier } from '../../agent/hosts/host-delivery';
import * as hostApi from '../../lib/contracts/host-api';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type { ApiDeps } from '../deps';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import { claimAndWake, type ClaimDeps } from '../../agent/jobs/turn-claims';
import { turnLimitsFrom } from '../../agent/settings/host-settings';

export function hostsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const notifier = new HostHeartbeatNotifier({ temporal: deps.temporal, settings: deps.settings, log: deps.log });
  const delivery = new ChatDelivery(deps.temporal, deps.settings, deps.log);
  const claims: ClaimDeps = {
    db: deps.db, log: deps.log, wake: (job) => delivery.wake(job),
    limits: () => ({
      staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, defaultSlots: deps.settings.AGENT_HOST_SLOTS,
      turnLimits: turnLimitsFrom(deps.agentSettings.current),
    }),
  };
  router.post(hostApi.hostHeartbeat.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const beat = validateBody(hostApi.hostHeartbeat.request, await readJsonBody(ctx.req, 64 * 1024));
    const record = await recordHeartbeat(deps.db, hostId, beat, deps.settings.AGENT_HOST_STALE_SECONDS);
    void notifier.notify(hostId, record, beat.slots_total);
    // The claim queue (docs/agent-hosts.md "The claim queue"): a beating host claims queued turns for its free slots, after the answer.
    void claimAndWake(claims, hostId);
    ctx.body = { host_id: hostId, ...record.answer } satisfies ResponseOf<typeof hostApi.hostHeartbeat>;
  });
  documentEndpoint(router, hostApi.hostHeartbeat);
  return router;
}
