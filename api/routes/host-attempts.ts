/**
 * Host runner calls on an admitted attempt, with the host's credential (the contract:
 * lib/contracts/host-api.ts): `GET …/attempts/:attemptId/context` (with `SCM_TOKEN` in its `env`
 * when repo tokens are issued and the forge mints one; otherwise it is left out and logged:
 * docs/forges.md), `POST …/attempts/:attemptId/clone-credential`, and
 * `POST …/attempts/:attemptId/patch`, the diff the turn produced (docs/publisher.md "Upload").
 * 409 `Attempt is not current` once the attempt has ended or moved; nothing is minted or stored then.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type { ApiDeps } from '../deps';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { attemptContext } from '../../agent/jobs/attempt-context';
import { attemptCloneCredential, attemptScmToken } from '../../agent/source/repo-credentials';
import { storeTurnPatch } from '../../agent/source/turn-patches';
import * as hostApi from '../../lib/contracts/host-api';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';

export function hostAttemptsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const patchMaxBytes = deps.settings.AGENT_PATCH_MAX_KIB * 1024;
  router.get(hostApi.attemptContext.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const attemptId = ctx.params.attemptId ?? '';
    ctx.set('cache-control', 'no-store');
    const context = await attemptContext(deps.db, { hostId, attemptId, turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS, patchMaxBytes });
    // A forge that cannot mint the repo token now does not fail the turn: the agent runs without SCM_TOKEN.
    const scmToken = await attemptScmToken(deps.db, deps.repoCredentials, { hostId, attemptId }).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'conflict') throw err;
      deps.log.warn({ event: 'agent_scm_token_unavailable', attempt_id: attemptId, error: cleanText(err instanceof Error ? err.message : String(err)).slice(0, 500) },
        'the repository token could not be minted; the turn runs without SCM_TOKEN');
      return undefined;
    });
    ctx.body = scmToken ? { ...context, env: { ...context.env, SCM_TOKEN: scmToken } } : context;
  });
  router.post(hostApi.attemptCloneCredential.route, requireHost(deps.db), async (ctx) => {
    ctx.set('cache-control', 'no-store');
    ctx.body = await attemptCloneCredential(deps.db, deps.repoCredentials, { hostId: hostOf(ctx.state), attemptId: ctx.params.attemptId ?? '' });
  });
  router.post(hostApi.attemptPatch.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const upload = validateBody(hostApi.attemptPatch.request, await readJsonBody(ctx.req, hostApi.patchBodyLimit(patchMaxBytes)));
    ctx.body = (await storeTurnPatch(deps.db, { hostId, attemptId: ctx.params.attemptId ?? '', upload, maxBytes: patchMaxBytes })) satisfies ResponseOf<typeof hostApi.attemptPatch>;
  });
  documentEndpoint(router, hostApi.attemptContext);
  documentEndpoint(router, hostApi.attemptCloneCredential);
  documentEndpoint(router, hostApi.attemptPatch);
  return router;
}
