/**
 * Host runner reads of an admitted attempt, with the host's credential (the contract:
 * lib/contracts/host-api.ts): `GET …/attempts/:attemptId/context` (with `SCM_TOKEN` in its `env`
 * when repo tokens are issued and the forge mints one; otherwise it is left out and logged:
 * docs/forges.md) and `POST …/attempts/:attemptId/clone-credential`.
 * 409 `Attempt is not current` once the attempt has ended or moved; nothing is minted then.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import type { ApiDeps } from '../app';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { attemptContext } from '../../agent/jobs/attempt-context';
import { attemptCloneCredential, attemptScmToken } from '../../agent/source/repo-credentials';
import * as hostApi from '../../lib/contracts/host-api';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';

export function hostAttemptsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.get(hostApi.attemptContext.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const attemptId = ctx.params.attemptId ?? '';
    ctx.set('cache-control', 'no-store');
    const context = await attemptContext(deps.db, { hostId, attemptId, turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS });
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
  return router;
}
