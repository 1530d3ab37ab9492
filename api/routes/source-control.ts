/**
 * `/v1/agent/source-control/…`: an owner links, lists and unlinks source-control accounts
 * (docs/source-control.md). `POST …/:provider/authorize` returns the provider's consent URL;
 * the provider sends the owner's browser to the deployment's redirect page, which posts the
 * `code` and `state` it received to `POST …/:provider/callback` with the owner's credential (so
 * the state is checked against the caller). `POST …/accounts/:accountId/refresh` fetches the
 * account's repositories from the provider again. Views never carry a token.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { findOwnedAccount, listAccounts, listGrants, unlinkAccount } from '../../agent/source/accounts';
import { refreshAccountGrants } from '../../agent/source/grants';
import { finishLink, startLink } from '../../agent/source/linking';
import { AccountUnusableError } from '../../agent/source/token-refresh';
import { AppError } from '../../lib/errors';
import { sourceControlFromSettings } from '../../agent/source/source-control';

const callbackSchema = z.object({
  code: z.string().min(1).max(2048),
  state: z.string().min(1).max(256),
}).strict();

export function sourceControlRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>({ prefix: '/v1/agent/source-control' });
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const link = { db: deps.db, sc: sourceControlFromSettings(deps.settings), log: deps.log };

  router.post('/:provider/authorize', owner, async (ctx) => {
    ctx.status = 201;
    ctx.body = await startLink(link, ownerOf(ctx.state).userId, ctx.params.provider ?? '');
  });
  router.post('/:provider/callback', owner, async (ctx) => {
    const body = validateBody(callbackSchema, await readJsonBody(ctx.req, 16 * 1024));
    ctx.status = 201;
    ctx.body = await finishLink(link, ownerOf(ctx.state).userId, ctx.params.provider ?? '', body);
  });
  router.get('/accounts', owner, async (ctx) => {
    ctx.body = { accounts: await listAccounts(deps.db, ownerOf(ctx.state).userId) };
  });
  router.get('/accounts/:accountId/repositories', owner, async (ctx) => {
    const account = await findOwnedAccount(deps.db, ctx.params.accountId ?? '', ownerOf(ctx.state).userId);
    ctx.body = { account_id: account.account_id, grants_refreshed_at: account.grants_refreshed_at?.toISOString() ?? null, repositories: await listGrants(deps.db, account.account_id) };
  });
  router.post('/accounts/:accountId/refresh', owner, async (ctx) => {
    const userId = ownerOf(ctx.state).userId;
    const account = await findOwnedAccount(deps.db, ctx.params.accountId ?? '', userId);
    await refreshAccountGrants({ ...link, log: ctx.state.log }, account).catch((err: unknown) => {
      if (!(err instanceof AccountUnusableError)) throw err;
      // 409: the owner must link again; 502: the provider did not answer (nothing changed).
      throw err.reason === 'needs_relink' ? new AppError('conflict', `The account cannot be used: ${err.message}`) : new AppError('upstream_error', `The repositories could not be fetched: ${err.message}`);
    });
    ctx.body = (await listAccounts(deps.db, userId)).find((a) => a.account_id === account.account_id);
  });
  router.delete('/accounts/:accountId', owner, async (ctx) => {
    await unlinkAccount(deps.db, ctx.params.accountId ?? '', ownerOf(ctx.state).userId);
    ctx.body = { account_id: ctx.params.accountId, unlinked: true };
  });
  documentRoute(router, 'POST', '/:provider/authorize', { noBody: true, success: 201, summary: 'Starts linking a source-control account.' });
  documentRoute(router, 'POST', '/:provider/callback', { body: callbackSchema, success: 201, summary: 'Completes linking a source-control account.' });
  documentRoute(router, 'POST', '/accounts/:accountId/refresh', { noBody: true, summary: "Refreshes a linked account's repositories." });
  return router;
}
