/**
 * `POST /v1/agent/prompts/rewrite` (owners with `agent.use`): body
 * `{prompt, model, clarify?, answers?}` → `{questions}` or `{prompt}` (docs/agent-grants.md).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { grantClientOr503 } from '../../agent/grants/host-grant';
import { rewritePrompt } from '../../agent/prompts/prompt-rewrite';
import { rewriteRequestSchema } from '../../agent/prompts/rewrite-model';

/** Body limit: 32,000 characters of prompt, four answers, JSON escaping. */
const BODY_LIMIT = 512 * 1024;

export function promptRewriteRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.post('/v1/agent/prompts/rewrite', owner, async (ctx) => {
    const request = validateBody(rewriteRequestSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const grants = grantClientOr503(deps.grants);
    ctx.body = await rewritePrompt({
      grants, gatewayUrl: deps.settings.AGENT_GATEWAY_URL, deadlineMs: deps.settings.AGENT_PROMPT_REWRITE_DEADLINE_SECONDS * 1000, log: ctx.state.log,
    }, ownerOf(ctx.state).userId, request);
  });
  documentRoute(router, 'POST', '/v1/agent/prompts/rewrite', { body: rewriteRequestSchema, statuses: [502, 503], summary: 'Rewrites a prompt with a model.' });
  return router;
}
