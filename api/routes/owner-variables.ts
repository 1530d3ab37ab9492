/**
 * `/v1/agent/variables`: an owner's global sandbox variables (names listed, values write-only).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { deleteVariable, listVariables, setVariable, variableValueSchema } from '../../agent/jobs/owner-variables';

export function ownerVariablesRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/variables', owner, async (ctx) => {
    ctx.body = await listVariables(deps.db, ownerOf(ctx.state).userId);
  });
  router.put('/v1/agent/variables/:name', owner, async (ctx) => {
    const body = validateBody(variableValueSchema, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = await setVariable(deps.db, ownerOf(ctx.state).userId, ctx.params.name ?? '', body.value);
  });
  router.delete('/v1/agent/variables/:name', owner, async (ctx) => {
    ctx.body = await deleteVariable(deps.db, ownerOf(ctx.state).userId, ctx.params.name ?? '');
  });
  documentRoute(router, 'PUT', '/v1/agent/variables/:name', { body: variableValueSchema, summary: 'Sets a variable of the owner.' });
  return router;
}
