/**
 * Linking a Gitea account through Gitea's real OAuth2 provider with PKCE (the run's Gitea on
 * loopback, real PostgreSQL): the owner signs in and grants the application over HTTP, the
 * callback exchanges the code with the PKCE verifier, stores the account and the repositories
 * its connection may access (own and collaborator repositories, not others'), and those grants
 * entitle jobs by URL. Gitea's refresh tokens are single-use: two replicas refreshing at once
 * spend one once, and the spent one is refused by Gitea afterwards.
 */
import assert from 'node:assert/strict';
import { tokenName, type AccountRow } from '../../../../agent/source/accounts';
import { sourceControlFromSettings, type SourceControl } from '../../../../agent/source/source-control';
import { usableAccessToken, type TokenDeps } from '../../../../agent/source/token-refresh';
import { createDb, type Db } from '../../../../lib/db';
import { loadSettings } from '../../../../lib/settings';
import { postJson } from '../../../support/accounts';
import { createOwner, type TestOwner } from '../../../support/agent-records';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { addGiteaCollaborator, createGiteaOAuth2App, createGiteaRepo, createGiteaUser, testGitea, type GiteaUser } from '../../../support/gitea';
import { consentAtGitea } from '../../../support/gitea-consent';
import { captureLogs } from '../../../support/logs';
import { TEST_SCM_KEY } from '../../../support/source-control';

const REDIRECT = 'http://127.0.0.1:9/settings/source-control/gitea/callback';

describe('owner API: linking a Gitea account through its OAuth2 provider with PKCE', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let replica: Db;
  let api: TestApi;
  let sc: SourceControl;
  let giteaUrl: string;
  let dev: GiteaUser;
  let owner: TestOwner;
  let accountId: string;
  let client: { clientId: string; clientSecret: string };
  const repos: Record<'own' | 'shared' | 'secret', string> = { own: '', shared: '', secret: '' };

  before(async () => {
    t = await freshDatabase();
    replica = createDb({ url: t.url, poolMax: 2 });
    const gitea = await testGitea();
    giteaUrl = gitea.url;
    dev = await createGiteaUser();
    const maintainer = await createGiteaUser();
    const own = await createGiteaRepo(dev.username);
    const shared = await createGiteaRepo(maintainer.username);
    const secret = await createGiteaRepo(maintainer.username);
    await addGiteaCollaborator(shared.owner, shared.name, dev.username, 'write');
    repos.own = `${giteaUrl}/${own.owner}/${own.name}`;
    repos.shared = `${giteaUrl}/${shared.owner}/${shared.name}`;
    repos.secret = `${giteaUrl}/${secret.owner}/${secret.name}`;
    const app = await createGiteaOAuth2App(maintainer, { redirectUris: [REDIRECT] });
    client = app;
    const env = {
      AGENT_SOURCE_CONTROL_ENCRYPTION_KEY: TEST_SCM_KEY, AGENT_GITEA_URL: giteaUrl, AGENT_GITEA_OAUTH_CLIENT_ID: app.clientId,
      AGENT_GITEA_OAUTH_CLIENT_SECRET: app.clientSecret, AGENT_GITEA_OAUTH_REDIRECT_URL: REDIRECT, TEMPORAL_CALL_TIMEOUT_SECONDS: '1',
    };
    sc = sourceControlFromSettings(loadSettings(env));
    api = await startTestApi({ db: t.db, env });
    owner = await createOwner(t.db);
  });
  after(async () => {
    await api.close();
    await replica.destroy();
    await t.drop();
  });

  const headers = () => ({ authorization: `Bearer ${owner.apiKey}` });
  const createJob = (repo: string) => postJson(`${api.url}/v1/agent/jobs`, { prompt: 'do it', model: 'm', repo }, headers());
  const accountRow = async () => (await t.db('agent_github_accounts').where({ account_id: accountId }).first<AccountRow | undefined>())!;
  const giteaUser = (token: string) => fetch(`${giteaUrl}/api/v1/user`, { headers: { authorization: `Bearer ${token}` } });

  it('links the account: sign-in and grant at Gitea, code exchanged with the PKCE verifier, grants stored', async () => {
    const started = await postJson(`${api.url}/v1/agent/source-control/gitea/authorize`, {}, headers());
    assert.equal(started.status, 201, await started.clone().text());
    const { authorize_url } = (await started.json()) as { authorize_url: string };
    assert.equal(new URL(authorize_url).searchParams.get('code_challenge_method'), 'S256');
    const consent = await consentAtGitea(giteaUrl, authorize_url, dev);

    const res = await postJson(`${api.url}/v1/agent/source-control/gitea/callback`, consent, headers());
    assert.equal(res.status, 201, await res.clone().text());
    const account = (await res.json()) as { account_id: string; login: string; provider: string; status: string };
    accountId = account.account_id;
    assert.deepEqual([account.provider, account.login, account.status], ['gitea', dev.username, 'linked']);
    const listed = await fetch(`${api.url}/v1/agent/source-control/accounts/${accountId}/repositories`, { headers: headers() });
    const urls = ((await listed.json()) as { repositories: Array<{ url: string }> }).repositories.map((r) => r.url).sort();
    assert.deepEqual(urls, [repos.own, repos.shared].sort(), 'own and collaborator repositories, not the maintainer\'s private one');

    const row = await accountRow();
    const accessToken = sc.sealer!.open(tokenName(accountId, 'access'), row.access_token_sealed);
    assert.ok(!row.access_token_sealed.includes(accessToken), 'sealed at rest');
    assert.equal((await giteaUser(accessToken)).status, 200, 'the stored token is Gitea\'s');
    assert.ok(row.access_token_expires_at!.getTime() > Date.now() + 7 * 3600_000, 'an 8-hour token');

    const replay = await postJson(`${api.url}/v1/agent/source-control/gitea/callback`, consent, headers());
    assert.equal(replay.status, 400, 'the state is consumed once');
  });

  it('binds the code to its PKCE challenge: a code presented with another state (another verifier) is refused by Gitea with 400', async () => {
    const start = async () => {
      const res = await postJson(`${api.url}/v1/agent/source-control/gitea/authorize`, {}, headers());
      return ((await res.json()) as { authorize_url: string }).authorize_url;
    };
    const first = await consentAtGitea(giteaUrl, await start(), dev);
    const second = new URL(await start()).searchParams.get('state')!;
    const before = await t.db('agent_github_accounts').select('account_id', 'access_token_sealed', 'updated_at');
    const res = await postJson(`${api.url}/v1/agent/source-control/gitea/callback`, { code: first.code, state: second }, headers());
    assert.equal(res.status, 400, await res.clone().text());
    assert.match(await res.text(), /gitea refused the authorization code/);
    assert.deepEqual(await t.db('agent_github_accounts').select('account_id', 'access_token_sealed', 'updated_at'), before, 'nothing was linked');
  });

  it('entitles jobs on the granted repositories by URL and refuses the rest with 403', async () => {
    assert.equal((await createJob(repos.own)).status, 201);
    assert.equal((await createJob(`${repos.shared}.git`)).status, 201);
    assert.equal((await createJob(repos.secret)).status, 403);
    assert.equal((await createJob(repos.own.slice(giteaUrl.length + 1))).status, 403, 'a bare owner/name names the source-control app\'s repository, not Gitea\'s');
  });

  it('refreshes through Gitea once for two replicas; the spent refresh token is refused afterwards', async () => {
    const before = await accountRow();
    const spent = sc.sealer!.open(tokenName(accountId, 'refresh'), before.refresh_token_sealed!);
    await t.db('agent_github_accounts').where({ account_id: accountId }).update({ access_token_expires_at: t.db.raw(`now() + interval '2 minutes'`) });
    const deps = (db: Db): TokenDeps => ({ db, sealer: sc.sealer!, provider: sc.providers.get('gitea')!, log: captureLogs('scm').log, pollMs: 20 });
    const [a, b] = await Promise.all([usableAccessToken(deps(t.db), accountId), usableAccessToken(deps(replica), accountId)]);
    assert.equal(a, b);
    assert.equal((await giteaUser(a)).status, 200, 'the new token works');
    const after = await accountRow();
    assert.equal(after.needs_relink_at, null, 'neither replica spent the refresh token a second time');
    const refreshWith = (refreshToken: string) => fetch(`${giteaUrl}/login/oauth/access_token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.clientId, client_secret: client.clientSecret }).toString(),
    });
    const reuse = await refreshWith(spent);
    assert.equal(reuse.status, 400, `Gitea refuses the spent refresh token: ${await reuse.clone().text()}`);
    assert.match(await reuse.text(), /already used/);
    assert.equal((await createJob(repos.own)).status, 201);
  });
});
