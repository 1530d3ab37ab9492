/**
 * Linking an owner's source-control account (docs/source-control.md, "Linking"): `startLink`
 * issues a state (and a PKCE verifier for Gitea) and returns the provider's authorize URL;
 * `finishLink` consumes the state once for the same owner and provider, exchanges the code,
 * reads the provider account and the repositories its connection may access, and stores them.
 * A refused code is 400; a provider that does not answer is 502. The state is consumed before the
 * exchange, so every failure after it asks the owner to start again.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import { listAccounts, storeLinkedAccount, type AccountView } from './accounts';
import { consumeState, issueState } from './oauth-states';
import { ProviderError } from './provider';
import { requireProvider, requireSealer, type SourceControl } from './source-control';

export interface LinkDeps {
  db: Db;
  sc: SourceControl;
  log: Logger;
}

/** Where the owner goes to consent, and until when the state is good. */
export async function startLink(deps: LinkDeps, userId: number, providerName: string): Promise<{ provider: string; authorize_url: string; state_expires_at: string }> {
  const provider = requireProvider(deps.sc, providerName);
  const sealer = requireSealer(deps.sc);
  const issued = await issueState(deps.db, sealer, { userId, provider: provider.name, pkce: provider.pkce });
  return { provider: provider.name, authorize_url: provider.authorizeUrl(issued.state, issued.codeChallenge), state_expires_at: issued.expiresAt.toISOString() };
}

function providerFailure(err: unknown, what: string): never {
  if (!(err instanceof ProviderError)) throw err;
  if (err.kind === 'refused') throw new AppError('invalid_request', `${err.provider} refused ${what}; start linking again`, { param: 'code' });
  throw new AppError('upstream_error', `${err.message}; nothing was linked, start linking again`);
}

/** Completes a link: returns the stored account's view. */
export async function finishLink(deps: LinkDeps, userId: number, providerName: string, input: { code: string; state: string }): Promise<AccountView> {
  const provider = requireProvider(deps.sc, providerName);
  const sealer = requireSealer(deps.sc);
  const verifier = await consumeState(deps.db, sealer, { state: input.state, userId, provider: provider.name });
  const tokens = await provider.exchangeCode(input.code, verifier).catch((err: unknown) => providerFailure(err, 'the authorization code'));
  const user = await provider.user(tokens.accessToken).catch((err: unknown) => providerFailure(err, 'the new token'));
  const grants = await provider.repositories(tokens.accessToken).catch((err: unknown) => providerFailure(err, 'the new token'));
  const accountId = await storeLinkedAccount(deps.db, sealer, { userId, provider: provider.name, user, tokens, grants });
  deps.log.info({ event: 'agent_source_control_linked', account_id: accountId, provider: provider.name, repositories: grants.length }, 'source-control account linked');
  const view = (await listAccounts(deps.db, userId)).find((a) => a.account_id === accountId);
  if (!view) throw new AppError('conflict', 'The account was unlinked while it was being linked');
  return view;
}
