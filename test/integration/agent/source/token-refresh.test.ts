/**
 * User tokens are refreshed within 5 minutes of their expiry under a row lease (real PostgreSQL,
 * a loopback GitHub whose refresh tokens are single-use): two API replicas refreshing at once
 * spend the refresh token once and both get the new token; a crashed holder's lapsed lease is
 * taken over; a refused or expired refresh token marks the account for re-linking and fails
 * closed; a provider that does not answer leaves the account as it was.
 */
import assert from 'node:assert/strict';
import { storeLinkedAccount, tokenName, type AccountRow } from '../../../../agent/source/accounts';
import type { GithubProvider } from '../../../../agent/source/github-provider';
import { sourceControlFromSettings, type SourceControl } from '../../../../agent/source/source-control';
import { AccountUnusableError, usableAccessToken, type TokenDeps } from '../../../../agent/source/token-refresh';
import { createDb, type Db } from '../../../../lib/db';
import { loadSettings } from '../../../../lib/settings';
import { createOwner } from '../../../support/agent-records';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { startLoopbackGithub, type LoopbackGithub } from '../../../support/loopback-github';
import { captureLogs } from '../../../support/logs';
import { consentAt, GITHUB_REDIRECT, githubEnv } from '../../../support/source-control';

describe('source-control token refresh under a row lease', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let replica: Db;
  let fake: LoopbackGithub;
  let sc: SourceControl;
  let provider: GithubProvider;
  let ownerId: number;
  const logs = captureLogs('scm');

  before(async () => {
    t = await freshDatabase();
    replica = createDb({ url: t.url, poolMax: 2 });
    fake = await startLoopbackGithub({ redirectUri: GITHUB_REDIRECT });
    fake.users.set('octo', { id: 7, login: 'octo', installations: { 1: ['acme/app'] } });
    sc = sourceControlFromSettings(loadSettings(githubEnv(fake)));
    provider = sc.providers.get('github') as GithubProvider;
    ownerId = (await createOwner(t.db)).userId;
  });
  after(async () => {
    await replica.destroy();
    await fake.close();
    await t.drop();
  });

  const deps = (db: Db): TokenDeps => ({ db, sealer: sc.sealer!, provider, log: logs.log, pollMs: 20 });

  /** Links `octo` through the provider's real wire and returns the account id and its first access token. */
  async function link(): Promise<{ accountId: string; accessToken: string }> {
    const { code } = await consentAt(provider.authorizeUrl('s'), 'octo');
    const tokens = await provider.exchangeCode(code);
    const accountId = await storeLinkedAccount(t.db, sc.sealer!, {
      userId: ownerId, provider: 'github', user: await provider.user(tokens.accessToken), tokens, grants: await provider.repositories(tokens.accessToken),
    });
    return { accountId, accessToken: tokens.accessToken };
  }
  const expireIn = (accountId: string, interval: string) =>
    t.db('agent_github_accounts').where({ account_id: accountId }).update({ access_token_expires_at: t.db.raw(`now() + interval '${interval}'`) });
  const row = async (accountId: string): Promise<AccountRow> => (await t.db('agent_github_accounts').where({ account_id: accountId }).first<AccountRow | undefined>())!;

  it('uses a token with more than 5 minutes left as is, without calling the provider', async () => {
    const { accountId, accessToken } = await link();
    await expireIn(accountId, '6 minutes');
    const asked = fake.counts.refreshAsked;
    assert.equal(await usableAccessToken(deps(t.db), accountId), accessToken);
    assert.equal(fake.counts.refreshAsked, asked);
  });

  it('two replicas refreshing at once spend the single-use refresh token once and both get the new token', async () => {
    const { accountId, accessToken } = await link();
    await expireIn(accountId, '4 minutes');
    fake.refreshDelayMs = 300;
    const asked = fake.counts.refreshAsked;
    try {
      const [a, b] = await Promise.all([usableAccessToken(deps(t.db), accountId), usableAccessToken(deps(replica), accountId)]);
      assert.equal(a, b, 'both replicas use the same new token');
      assert.notEqual(a, accessToken);
      assert.equal(fake.counts.refreshAsked - asked, 1, 'the refresh token was presented once');
    } finally {
      fake.refreshDelayMs = 0;
    }
    const after = await row(accountId);
    assert.equal(after.refresh_holder, null, 'the lease is released');
    assert.equal(after.needs_relink_at, null);
    assert.ok(after.access_token_expires_at!.getTime() > Date.now() + 7 * 3600_000, 'the new token lasts 8 hours');
    assert.equal(sc.sealer!.open(tokenName(accountId, 'access'), after.access_token_sealed), await usableAccessToken(deps(t.db), accountId));
  });

  it('takes over the lapsed lease of a crashed refresher', async () => {
    const { accountId, accessToken } = await link();
    await t.db('agent_github_accounts').where({ account_id: accountId })
      .update({ access_token_expires_at: t.db.raw(`now() + interval '1 minute'`), refresh_holder: 'lease_crashed', refresh_lease_until: t.db.raw(`now() - interval '1 second'`) });
    const fresh = await usableAccessToken(deps(replica), accountId);
    assert.notEqual(fresh, accessToken);
    assert.equal((await row(accountId)).refresh_holder, null);
  });

  it('waits for the holder of a live lease and reads the token it wrote, without refreshing itself', async () => {
    const { accountId } = await link();
    await t.db('agent_github_accounts').where({ account_id: accountId })
      .update({ access_token_expires_at: t.db.raw(`now() + interval '1 minute'`), refresh_holder: 'lease_other', refresh_lease_until: t.db.raw(`now() + interval '20 seconds'`) });
    const asked = fake.counts.refreshAsked;
    const waiting = usableAccessToken(deps(replica), accountId);
    const written = 'ghu_written_by_the_other_replica';
    await t.db('agent_github_accounts').where({ account_id: accountId, refresh_holder: 'lease_other' }).update({
      access_token_sealed: sc.sealer!.seal(tokenName(accountId, 'access'), written), access_token_expires_at: t.db.raw(`now() + interval '8 hours'`),
      refresh_holder: null, refresh_lease_until: null,
    });
    assert.equal(await waiting, written);
    assert.equal(fake.counts.refreshAsked, asked);
  });

  it('marks the account for re-linking when the provider refuses the refresh token, and fails closed from then on', async () => {
    const { accountId } = await link();
    await expireIn(accountId, '2 minutes');
    fake.revoke('octo');
    await assert.rejects(usableAccessToken(deps(t.db), accountId), (err: unknown) => err instanceof AccountUnusableError && err.reason === 'needs_relink');
    const marked = await row(accountId);
    assert.ok(marked.needs_relink_at instanceof Date);
    assert.match(marked.relink_reason ?? '', /refused the refresh token/);
    const asked = fake.counts.refreshAsked;
    await assert.rejects(usableAccessToken(deps(replica), accountId), (err: unknown) => err instanceof AccountUnusableError && err.reason === 'needs_relink');
    assert.equal(fake.counts.refreshAsked, asked, 'a marked account is not refreshed again');
    assert.ok(logs.lines.some((l) => l.event === 'agent_source_control_relink_needed' && l.account_id === accountId));
  });

  it('marks the account for re-linking without a provider call when its refresh token expired', async () => {
    const { accountId } = await link();
    await t.db('agent_github_accounts').where({ account_id: accountId })
      .update({ access_token_expires_at: t.db.raw(`now() - interval '1 minute'`), refresh_token_expires_at: t.db.raw(`now() - interval '1 minute'`) });
    const asked = fake.counts.refreshAsked;
    await assert.rejects(usableAccessToken(deps(t.db), accountId), /must be linked again: its refresh token expired/);
    assert.equal(fake.counts.refreshAsked, asked);
  });

  it('leaves the account as it was when the provider does not answer: a still valid token is used, an expired one fails', async () => {
    const { accountId, accessToken } = await link();
    await expireIn(accountId, '2 minutes');
    fake.down = true;
    try {
      assert.equal(await usableAccessToken(deps(t.db), accountId), accessToken);
      await expireIn(accountId, '-1 minute');
      await assert.rejects(usableAccessToken(deps(t.db), accountId), (err: unknown) => err instanceof AccountUnusableError && err.reason === 'unavailable');
    } finally {
      fake.down = false;
    }
    const after = await row(accountId);
    assert.equal(after.needs_relink_at, null, 'an outage is not a revocation');
    assert.equal(after.refresh_holder, null);
    assert.notEqual(await usableAccessToken(deps(t.db), accountId), accessToken, 'once the provider answers, the refresh goes through');
  });
});
