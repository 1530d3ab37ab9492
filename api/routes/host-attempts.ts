/**
 * Host runner calls on an admitted attempt, with the host's credential (the contract:
 * lib/contracts/host-api.ts): `GET …/attempts/:attemptId/context` reads what the turn needs, and
 * `POST …/attempts/:attemptId/patch` uploads the diff the turn produced (docs/publisher.md
 * "Upload"). Both answer 409 `Attempt is not current` once the attempt has ended or moved.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type { ApiDeps } from '../app';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { attemptContext } from '../../agent/jobs/attempt-context';
import { storeTurnPatch } from '../../agent/source/turn-patches';
import * as hostApi from '../../lib/contracts/host-api';

export function hostAttemptsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const patchMaxBytes = deps.settings.AGENT_PATCH_MAX_KIB * 1024;
  router.get(hostApi.attemptContext.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    ctx.set('cache-control', 'no-store');
    ctx.body = await attemptContext(deps.db, {
      hostId, attemptId: ctx.params.attemptId ?? '', turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS, patchMaxBytes,
    });
  });
  router.post(hostApi.attemptPatch.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const upload = validateBody(hostApi.attemptPatch.request, await readJsonBody(ctx.req, hostApi.patchBodyLimit(patchMaxBytes)));
    ctx.body = (await storeTurnPatch(deps.db, { hostId, attemptId: ctx.params.attemptId ?? '', upload, maxBytes: patchMaxBytes })) satisfies ResponseOf<typeof hostApi.attemptPatch>;
  });
  return router;
}
