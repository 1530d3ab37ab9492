/**
 * Source-control test helpers: settings pointing the `github` provider at a loopback GitHub
 * (test/support/loopback-github.ts), and the user's consent at its authorize endpoint over HTTP.
 */
import assert from 'node:assert/strict';
import type { LoopbackGithub } from './loopback-github';

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
