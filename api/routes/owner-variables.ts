/**
 * `/v1/agent/variables`: an owner's global sandbox variables (names listed, values write-only).
 */
import Router from '@koa/router';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../app';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { deleteVariable, listVariables, setVariable, variableValueSchema } from '../jobs/owner-variables';

export function ownerVariablesRouter(deps: ApiDeps): Router<AgentState> {
  const router = new Router<AgentState>({ prefix: '/v1/agent/variables' });
  router.use(requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN }));
  router.get('/', async (ctx) => {
    ctx.body = await listVariables(deps.db, ownerOf(ctx.state).userId);
  });
  router.put('/:name', async (ctx) => {
    const body = validateBody(variableValueSchema, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = await setVariable(deps.db, ownerOf(ctx.state).userId, ctx.params.name ?? '', body.value);
  });
  router.delete('/:name', async (ctx) => {
    ctx.body = await deleteVariable(deps.db, ownerOf(ctx.state).userId, ctx.params.name ?? '');
  });
  return router;
}
