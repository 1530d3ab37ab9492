/**
 * Linking source-control accounts over the owner API (real PostgreSQL, a loopback GitHub that
 * speaks the documented wire, docs/source-control.md): the authorize URL carries an unpredictable
 * state bound to the owner and the provider for 10 minutes; the callback consumes it once and
 * stores the account with its repository grants; tokens are sealed at rest and never in a
 * response or a log; a replayed, expired, other-owner or other-provider state is refused with
 * 400 and nothing changes; Gitea's flow carries a PKCE S256 challenge; unlinking is the owner's.
 */
import assert from 'node:assert/strict';
import { postJson } from '../../../support/accounts';
import { createOwner, type TestOwner } from '../../../support/agent-records';
import { startTestApi, type TestApi } from '../../../support/api';
import type { TestDatabase } from '../../../support/db';
import type { LoopbackGithub } from '../../../support/loopback-github';
import { consentAt, GITHUB_REDIRECT, githubEnv, githubLinkingForBlock } from '../../../support/source-control';

const GITEA = { AGENT_GITEA_URL: 'http://127.0.0.1:9/gitea', AGENT_GITEA_OAUTH_CLIENT_ID: 'gitea-client', AGENT_GITEA_OAUTH_CLIENT_SECRET: 'gitea-secret', AGENT_GITEA_OAUTH_REDIRECT_URL: 'http://127.0.0.1:9/cb/gitea' };

interface AccountBody { account_id: string; login: string; status: string; repositories: number; provider_account_id: string }

describe('owner API: linking source-control accounts through OAuth', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let fake: LoopbackGithub;
  let api: TestApi;
  let alice: TestOwner;
  let bob: TestOwner;

  githubLinkingForBlock({
    users: [
      { id: 101, login: 'alice-gh', installations: { 11: ['acme/app', 'acme/lib'], 12: ['alice-gh/dotfiles'] } },
      { id: 202, login: 'bob-gh', installations: { 21: ['bob-gh/site'] } },
    ],
    env: GITEA,
  }, (linking) => ({ t, github: fake, api, alice, bob } = linking));

  const auth = (o: TestOwner) => ({ authorization: `Bearer ${o.apiKey}` });
  const start = async (o: TestOwner, provider = 'github') => {
    const res = await postJson(`${api.url}/v1/agent/source-control/${provider}/authorize`, {}, auth(o));
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as { authorize_url: string; state_expires_at: string };
  };
  const callback = (o: TestOwner, body: unknown, provider = 'github') => postJson(`${api.url}/v1/agent/source-control/${provider}/callback`, body, auth(o));
  const accounts = async (o: TestOwner) => {
    const res = await fetch(`${api.url}/v1/agent/source-control/accounts`, { headers: auth(o) });
    assert.equal(res.status, 200);
    return ((await res.json()) as { accounts: AccountBody[] }).accounts;
  };
  const stateRows = () => t.db('agent_source_control_oauth_states').orderBy('state_hash').select('*');

  it('links an account: an unpredictable state for 10 minutes, tokens sealed at rest and absent from answers and logs', async () => {
    const started = await start(alice);
    const url = new URL(started.authorize_url);
    assert.equal(`${url.origin}${url.pathname}`, `${fake.url}/login/oauth/authorize`);
    assert.equal(url.searchParams.get('client_id'), fake.clientId);
    assert.equal(url.searchParams.get('redirect_uri'), GITHUB_REDIRECT);
    const state = url.searchParams.get('state') ?? '';
    assert.ok(Buffer.from(state, 'base64url').length >= 16, 'at least 128 random bits');
    const [stored] = await t.db('agent_source_control_oauth_states').select<Array<Record<string, unknown>>>('*', t.db.raw('extract(epoch from expires_at - created_at)::int as ttl'));
    assert.equal(stored!.ttl, 600);
    assert.ok(!JSON.stringify(stored).includes(state), 'the state is stored as its hash only');

    const res = await callback(alice, await consentAt(started.authorize_url, 'alice-gh'));
    const text = await res.text();
    assert.equal(res.status, 201, text);
    const account = JSON.parse(text) as AccountBody;
    assert.deepEqual([account.login, account.provider_account_id, account.status, account.repositories], ['alice-gh', '101', 'linked', 3]);

    const repos = await fetch(`${api.url}/v1/agent/source-control/accounts/${account.account_id}/repositories`, { headers: auth(alice) });
    const listed = (await repos.json()) as { repositories: Array<{ repo: string; url: string }> };
    assert.deepEqual(listed.repositories.map((r) => r.repo), ['acme/app', 'acme/lib', 'alice-gh/dotfiles']);
    assert.equal(listed.repositories[0]!.url, `${fake.url}/acme/app`);

    const row = await t.db('agent_github_accounts').where({ account_id: account.account_id }).first<Record<string, unknown>>();
    const everything = JSON.stringify([row, text, await accounts(alice), api.logs.lines]);
    for (const secret of fake.issued) assert.ok(!everything.includes(secret), 'no issued token is stored in clear, answered or logged');
    assert.match(String(row.access_token_sealed), /^v1\./);
    assert.match(String(row.refresh_token_sealed), /^v1\./);
  });

  it('refuses a replayed state with 400, without a second exchange or any change', async () => {
    const started = await start(alice);
    const consent = await consentAt(started.authorize_url, 'alice-gh');
    assert.equal((await callback(alice, consent)).status, 201);
    const before = { states: await stateRows(), accounts: await accounts(alice), exchanges: fake.counts.tokenRequests };
    const replay = await callback(alice, consent);
    assert.equal(replay.status, 400);
    assert.match(((await replay.json()) as { error: { message: string } }).error.message, /already used/);
    assert.deepEqual({ states: await stateRows(), accounts: await accounts(alice), exchanges: fake.counts.tokenRequests }, before);
    assert.equal(before.accounts.length, 1, 'linking the same provider account again updates it');
  });

  it('links the same provider account from two callbacks at once as one account', async () => {
    const dave = await createOwner(t.db);
    fake.users.set('dave-gh', { id: 404, login: 'dave-gh', installations: { 41: ['dave-gh/app'] } });
    const consents = await Promise.all([start(dave), start(dave)].map(async (s) => consentAt((await s).authorize_url, 'dave-gh')));
    const answers = await Promise.all(consents.map((c) => callback(dave, c)));
    assert.deepEqual(answers.map((a) => a.status), [201, 201]);
    const ids = await Promise.all(answers.map(async (a) => ((await a.json()) as AccountBody).account_id));
    assert.equal(ids[0], ids[1]);
    assert.equal((await accounts(dave)).length, 1);
  });

  it('refuses an expired state with 400 and nothing changes', async () => {
    const started = await start(bob);
    const consent = await consentAt(started.authorize_url, 'bob-gh');
    await t.db('agent_source_control_oauth_states').whereNull('consumed_at').update({ expires_at: t.db.raw(`now() - interval '1 second'`) });
    const before = await stateRows();
    const res = await callback(bob, consent);
    assert.equal(res.status, 400);
    assert.match(await res.text(), /expired/);
    assert.deepEqual(await stateRows(), before);
    assert.deepEqual(await accounts(bob), []);
  });

  it('refuses another owner\'s state and another provider\'s state with 400, leaving it usable by its owner', async () => {
    const started = await start(alice);
    const consent = await consentAt(started.authorize_url, 'bob-gh');
    const other = await callback(bob, consent);
    assert.equal(other.status, 400);
    assert.match(await other.text(), /not issued to you/);
    const wrongProvider = await callback(alice, consent, 'gitea');
    assert.equal(wrongProvider.status, 400);
    assert.match(await wrongProvider.text(), /another provider/);
    assert.deepEqual(await accounts(bob), []);
    const own = await callback(alice, consent);
    assert.equal(own.status, 201, 'the state was not consumed by the refused attempts');
    assert.equal(((await own.json()) as AccountBody).login, 'bob-gh', 'the account is whichever GitHub user consented');
  });

  it('starts Gitea links with a PKCE S256 challenge and keeps the verifier sealed', async () => {
    const started = await start(alice, 'gitea');
    const url = new URL(started.authorize_url);
    assert.equal(`${url.origin}${url.pathname}`, 'http://127.0.0.1:9/gitea/login/oauth/authorize');
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.match(url.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    const row = await t.db('agent_source_control_oauth_states').where({ provider: 'gitea' }).first<Record<string, unknown>>();
    assert.match(String(row.pkce_verifier_sealed), /^v1\./);
    const github = await start(alice);
    assert.equal(new URL(github.authorize_url).searchParams.get('code_challenge'), null);
  });

  it('reads every page of the installations\' repositories', async () => {
    const many = Array.from({ length: 230 }, (_, i) => `big-org/repo-${String(i).padStart(3, '0')}`);
    fake.users.set('carol-gh', { id: 303, login: 'carol-gh', installations: { 31: many.slice(0, 130), 32: many.slice(130) } });
    const carol = await createOwner(t.db);
    const started = await start(carol);
    const res = await callback(carol, await consentAt(started.authorize_url, 'carol-gh'));
    assert.equal(res.status, 201, await res.clone().text());
    const account = (await res.json()) as AccountBody;
    assert.equal(account.repositories, 230);
    const listed = await fetch(`${api.url}/v1/agent/source-control/accounts/${account.account_id}/repositories`, { headers: auth(carol) });
    assert.deepEqual(((await listed.json()) as { repositories: Array<{ repo: string }> }).repositories.map((r) => r.repo), many);
  });

  it('answers bad input with 4xx: unknown provider 404, a malformed callback 400', async () => {
    assert.equal((await postJson(`${api.url}/v1/agent/source-control/gitlab/authorize`, {}, auth(alice))).status, 404);
    assert.equal((await callback(alice, { state: 'x' })).status, 400);
    assert.equal((await callback(alice, { code: 'c', state: 's', extra: 1 })).status, 400);
    assert.equal((await callback(alice, { code: 'c', state: 'never-issued' })).status, 400);
  });

  it('refreshes an account\'s repositories on request: 404 for another owner, 502 with nothing changed while the provider is down, 409 once the token is revoked', async () => {
    const account = (await accounts(alice)).find((a) => a.login === 'alice-gh')!;
    const url = `${api.url}/v1/agent/source-control/accounts/${account.account_id}/refresh`;
    assert.equal((await postJson(url, {}, auth(bob))).status, 404);
    fake.users.get('alice-gh')!.installations[12] = ['alice-gh/dotfiles', 'alice-gh/new-project'];
    const refreshed = await postJson(url, {}, auth(alice));
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    assert.equal(((await refreshed.json()) as AccountBody).repositories, 4);

    fake.users.get('alice-gh')!.installations[12] = ['alice-gh/dotfiles'];
    fake.down = true;
    try {
      assert.equal((await postJson(url, {}, auth(alice))).status, 502);
    } finally {
      fake.down = false;
    }
    assert.equal((await accounts(alice)).find((a) => a.login === 'alice-gh')!.repositories, 4, 'the grants stayed as they were');

    fake.revoke('alice-gh');
    const revoked = await postJson(url, {}, auth(alice));
    assert.equal(revoked.status, 409);
    assert.match(await revoked.text(), /must be linked again/);
    assert.equal((await accounts(alice)).find((a) => a.login === 'alice-gh')!.status, 'needs_relink');
  });

  it('unlinks only the owner\'s own account', async () => {
    const account = (await accounts(alice)).find((a) => a.login === 'alice-gh');
    const url = `${api.url}/v1/agent/source-control/accounts/${account!.account_id}`;
    assert.equal((await fetch(url, { method: 'DELETE', headers: auth(bob) })).status, 404);
    assert.equal((await fetch(`${url}/repositories`, { headers: auth(bob) })).status, 404);
    assert.equal((await fetch(url, { method: 'DELETE', headers: auth(alice) })).status, 200);
    assert.deepEqual((await accounts(alice)).map((a) => a.login), ['bob-gh'], 'only the unlinked account is gone');
    assert.equal(Number((await t.db('agent_repo_grants').where({ account_id: account!.account_id }).count<Array<{ count: string }>>({ count: '*' }))[0]!.count), 0);
  });

  it('answers 503 naming the key when the deployment has no AGENT_SOURCE_CONTROL_ENCRYPTION_KEY', async () => {
    const { AGENT_SOURCE_CONTROL_ENCRYPTION_KEY: _key, ...env } = githubEnv(fake);
    const keyless = await startTestApi({ db: t.db, env });
    try {
      const res = await postJson(`${keyless.url}/v1/agent/source-control/github/authorize`, {}, auth(alice));
      assert.equal(res.status, 503);
      assert.match(await res.text(), /AGENT_SOURCE_CONTROL_ENCRYPTION_KEY/);
    } finally {
      await keyless.close();
    }
  });
});
