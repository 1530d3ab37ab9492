/**
 * Source-control test helpers: settings pointing the `github` provider at a loopback GitHub
 * (test/support/loopback-github.ts), the user's consent at its authorize endpoint over HTTP, and
 * the world of a test linking GitHub accounts over the owner API.
 */
import assert from 'node:assert/strict';
import { createOwner, type TestOwner } from './agent-records';
import { startTestApi, type TestApi } from './api';
import { freshDatabase, type TestDatabase } from './db';
import { startLoopbackGithub, type GithubUser, type LoopbackGithub } from './loopback-github';

/** The key test deployments seal source-control tokens with (>= 32 bytes). */
export const TEST_SCM_KEY = 'test-source-control-key-of-at-least-32-bytes';

/** The redirect page GitHub sends owners back to (never fetched: tests read the Location). */
export const GITHUB_REDIRECT = 'http://127.0.0.1:9/settings/source-control/github/callback';

/** API settings offering the loopback GitHub as the `github` provider. */
export function githubEnv(fake: LoopbackGithub): Record<string, string> {
  return {
    AGENT_SOURCE_CONTROL_ENCRYPTION_KEY: TEST_SCM_KEY,
    AGENT_GITHUB_OAUTH_CLIENT_ID: fake.clientId,
    AGENT_GITHUB_OAUTH_CLIENT_SECRET: fake.clientSecret,
    AGENT_GITHUB_OAUTH_REDIRECT_URL: GITHUB_REDIRECT,
    AGENT_GITHUB_WEB_URL: fake.url,
    AGENT_GITHUB_API_URL: fake.url,
  };
}

/** Opens `authorizeUrl` as the signed-in GitHub user `login` and returns the code and state it redirects with. */
export async function consentAt(authorizeUrl: string, login: string): Promise<{ code: string; state: string }> {
  const res = await fetch(authorizeUrl, { redirect: 'manual', headers: { cookie: `fake_github_user=${login}` } });
  assert.equal(res.status, 302, await res.clone().text());
  const back = new URL(res.headers.get('location') ?? '');
  return { code: back.searchParams.get('code') ?? '', state: back.searchParams.get('state') ?? '' };
}

/** What a describe block linking GitHub accounts over the owner API works with. */
export interface GithubLinking {
  t: TestDatabase;
  github: LoopbackGithub;
  /** The API offering `github` as the `github` provider. */
  api: TestApi;
  /** Two owners (`agent.use`). */
  alice: TestOwner;
  bob: TestOwner;
}

/**
 * Mocha hooks for a describe block: a fresh database, the loopback GitHub with `users`, a test API
 * offering it (`githubEnv` plus `env`) and the owners alice and bob before its tests, all closed
 * after them. `use` receives them.
 */
export function githubLinkingForBlock(setup: { users: GithubUser[]; env?: Record<string, string> }, use: (linking: GithubLinking) => void): void {
  const started: Array<() => Promise<void>> = [];
  before(async () => {
    const t = await freshDatabase();
    started.push(() => t.drop());
    const github = await startLoopbackGithub({ redirectUri: GITHUB_REDIRECT });
    started.push(() => github.close());
    for (const user of setup.users) github.users.set(user.login, user);
    const api = await startTestApi({ db: t.db, env: { ...githubEnv(github), ...setup.env } });
    started.push(() => api.close());
    use({ t, github, api, alice: await createOwner(t.db), bob: await createOwner(t.db) });
  });
  after(async () => {
    for (const close of started.reverse()) await close();
  });
}
