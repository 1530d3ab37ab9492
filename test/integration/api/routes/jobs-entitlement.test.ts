/**
 * Repository entitlement at job creation (real PostgreSQL, the loopback GitHub): a repository is
 * entitled through the deployment allowlist or through a grant of the owner's linked account
 * (fetched again from the provider when stale, the token refreshed when due). Anything else, and
 * anything that cannot be checked (provider down, a refresh refused), is 403 with nothing created.
 */
import assert from 'node:assert/strict';
import { tokenName } from '../../../../agent/source/accounts';
import { SOURCE_CONTROL_SEALER_PURPOSE } from '../../../../agent/source/source-control';
import { SecretSealer } from '../../../../lib/sealed-secret';
import { postJson } from '../../../support/accounts';
import type { TestOwner } from '../../../support/agent-records';
import type { TestApi } from '../../../support/api';
import type { TestDatabase } from '../../../support/db';
import type { LoopbackGithub } from '../../../support/loopback-github';
import { consentAt, githubLinkingForBlock, TEST_SCM_KEY } from '../../../support/source-control';

describe('job creation: repository entitlement through a linked account or the allowlist', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let fake: LoopbackGithub;
  let api: TestApi;
  let alice: TestOwner;
  let bob: TestOwner;
  let accountId: string;

  githubLinkingForBlock({
    users: [{ id: 101, login: 'alice-gh', installations: { 11: ['acme/app'] } }],
    env: { AGENT_REPO_ALLOWLIST: 'public/thing', TEMPORAL_CALL_TIMEOUT_SECONDS: '1' },
  }, (linking) => ({ t, github: fake, api, alice, bob } = linking));
  before(async () => {
    accountId = await link(alice, 'alice-gh');
  });

  const auth = (o: TestOwner) => ({ authorization: `Bearer ${o.apiKey}` });
  async function link(o: TestOwner, login: string): Promise<string> {
    const started = await postJson(`${api.url}/v1/agent/source-control/github/authorize`, {}, auth(o));
    const { authorize_url } = (await started.json()) as { authorize_url: string };
    const res = await postJson(`${api.url}/v1/agent/source-control/github/callback`, await consentAt(authorize_url, login), auth(o));
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { account_id: string }).account_id;
  }
  const jobs = async () => Number((await t.db('agent_jobs').count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
  const createJob = (o: TestOwner, repo: string) => postJson(`${api.url}/v1/agent/jobs`, { prompt: 'do it', model: 'm', repo }, auth(o));
  async function refused(o: TestOwner, repo: string, message: RegExp): Promise<void> {
    const before = await jobs();
    const res = await createJob(o, repo);
    assert.equal(res.status, 403, await res.clone().text());
    assert.match(((await res.json()) as { error: { message: string } }).error.message, message);
    assert.equal(await jobs(), before, 'nothing was created');
  }
  const account = (set: Record<string, unknown>) => t.db('agent_github_accounts').where({ account_id: accountId }).update(set);

  it('creates a job on a repository the linked account grants, by name or by URL', async () => {
    for (const repo of ['acme/app', 'ACME/App', `${fake.url}/acme/app.git`, `${fake.url}/acme/app/`]) {
      const res = await createJob(alice, repo);
      assert.equal(res.status, 201, `${repo}: ${await res.clone().text()}`);
    }
  });

  it('creates a job on an allowlisted repository without any account', async () => {
    assert.equal((await createJob(bob, 'public/thing')).status, 201);
  });

  it('refuses with 403 and creates nothing: no account, or no grant', async () => {
    await refused(bob, 'acme/app', /no linked source-control account/);
    await refused(alice, 'acme/other', /none of your linked source-control accounts grants it/);
    await refused(alice, 'https://elsewhere.example/acme/app', /none of your linked source-control accounts grants it/);
  });

  it('fetches stale grants again from the provider first: a repository granted since then is entitled', async () => {
    fake.users.get('alice-gh')!.installations[11] = ['acme/app', 'acme/new'];
    await refused(alice, 'acme/new', /none of your linked/);
    await account({ grants_refreshed_at: t.db.raw(`now() - interval '1 hour'`) });
    assert.equal((await createJob(alice, 'acme/new')).status, 201);
  });

  it('fails closed with 403 when stale grants cannot be fetched because the provider is down', async () => {
    await account({ grants_refreshed_at: t.db.raw(`now() - interval '1 hour'`) });
    fake.down = true;
    try {
      await refused(alice, 'acme/app', /could not be checked: github did not list the repositories/);
    } finally {
      fake.down = false;
    }
  });

  it('refreshes a token that is due, and fails closed once the provider refuses the refresh (re-linking needed)', async () => {
    await account({ access_token_expires_at: t.db.raw(`now() + interval '1 minute'`) });
    const granted = fake.counts.refreshGranted;
    assert.equal((await createJob(alice, 'acme/app')).status, 201);
    assert.equal(fake.counts.refreshGranted - granted, 1);

    await account({ access_token_expires_at: t.db.raw(`now() + interval '1 minute'`) });
    fake.revoke('alice-gh');
    await refused(alice, 'acme/app', /must be linked again/);
    const res = await fetch(`${api.url}/v1/agent/source-control/accounts`, { headers: auth(alice) });
    const [view] = ((await res.json()) as { accounts: Array<{ status: string }> }).accounts;
    assert.equal(view!.status, 'needs_relink');
    await refused(alice, 'acme/app', /must be linked again/);

    assert.equal(await link(alice, 'alice-gh'), accountId, 'linking again restores the same account');
    assert.equal((await createJob(alice, 'acme/app')).status, 201);
  });

  it('fails closed with 403, not a 5xx, when the stored token does not open: sealed for another account', async () => {
    const sealer = new SecretSealer(TEST_SCM_KEY, SOURCE_CONTROL_SEALER_PURPOSE);
    await account({ access_token_sealed: sealer.seal(tokenName('sca_someoneelse', 'access'), 'ghu_copied') });
    await refused(alice, 'acme/app', /cannot be decrypted with the configured AGENT_SOURCE_CONTROL_ENCRYPTION_KEY/);
  });

  it('an allowlisted repository needs no usable account', async () => {
    await account({ needs_relink_at: t.db.fn.now(), relink_reason: 'test' });
    assert.equal((await createJob(alice, 'public/thing')).status, 201);
  });
});
