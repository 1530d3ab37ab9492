/**
 * The host runner's SSH server asking who may open a session into a chat's sandbox, and
 * reporting each session's end (host credential; contracts of lib/contracts/host-ssh.ts;
 * docs/ssh.md). The decision and the audit rows are agent/ssh/ssh-sessions.ts's.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import * as hostSsh from '../../lib/contracts/host-ssh';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import { closeSshSession, openSshSession } from '../../agent/ssh/ssh-sessions';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

export function hostSshRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post(hostSsh.sshSessionOpen.route, requireHost(deps.db), async (ctx) => {
    const body = validateBody(hostSsh.sshSessionOpen.request, await readJsonBody(ctx.req, 16 * 1024));
    const answer = await openSshSession(deps.db, {
      hostId: hostOf(ctx.state), jobId: body.job_id, publicKey: body.public_key, ...(body.client_address ? { clientAddress: body.client_address } : {}),
    });
    ctx.body = answer satisfies ResponseOf<typeof hostSsh.sshSessionOpen>;
  });
  router.post(hostSsh.sshSessionClose.route, requireHost(deps.db), async (ctx) => {
    const body = validateBody(hostSsh.sshSessionClose.request, await readJsonBody(ctx.req, 4 * 1024));
    ctx.body = await closeSshSession(deps.db, {
      hostId: hostOf(ctx.state), jobId: body.job_id, sessionId: ctx.params.sessionId ?? '', endedBy: body.ended_by,
    }) satisfies ResponseOf<typeof hostSsh.sshSessionClose>;
  });
  documentEndpoint(router, hostSsh.sshSessionOpen);
  documentEndpoint(router, hostSsh.sshSessionClose);
  return router;
}
