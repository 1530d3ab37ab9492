/**
 * The source-control app's OAuth and account wire (GitHub; the subset documented in
 * docs/source-control.md, "GitHub wire"): authorize at `<web>/login/oauth/authorize`, tokens from
 * `POST <web>/login/oauth/access_token` (expiring user tokens: `expires_in` 28800 s and a
 * single-use `refresh_token` of `refresh_token_expires_in` 15897600 s), the account from
 * `GET <api>/user`, and the repositories from `GET <api>/user/installations` and
 * `GET <api>/user/installations/{id}/repositories` (what the user's connection may access through
 * the app's installations). Base URLs are settings, so tests point them at loopback.
 */
import { z } from 'zod';
import { apiAnswer, MAX_GRANTS, postTokenForm, providerFetch, providerText, type ProviderUser, type RepoGrant, type ScmProvider, type TokenSet } from './provider';

export interface GithubProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUrl: string;
  webUrl: string;
  apiUrl: string;
  timeoutMs: number;
}

const PER_PAGE = 100;
const permissions = z.record(z.string().max(64), z.boolean()).optional();
const userAnswer = z.object({ id: z.number().int(), login: providerText(100) });
const installationsAnswer = z.object({ installations: z.array(z.object({ id: z.number().int() })).max(PER_PAGE) });
const reposAnswer = z.object({
  repositories: z.array(z.object({ full_name: providerText(300), html_url: providerText(1000), permissions })).max(PER_PAGE),
});

/** GitHub as the deployment's source-control app. */
export class GithubProvider implements ScmProvider {
  readonly name = 'github' as const;
  readonly pkce = false;

  constructor(private readonly options: GithubProviderOptions) {}

  authorizeUrl(state: string): string {
    const url = new URL('/login/oauth/authorize', this.options.webUrl);
    url.search = new URLSearchParams({ client_id: this.options.clientId, redirect_uri: this.options.redirectUrl, state }).toString();
    return url.toString();
  }

  exchangeCode(code: string): Promise<TokenSet> {
    return this.token({ code, redirect_uri: this.options.redirectUrl });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return this.token({ grant_type: 'refresh_token', refresh_token: refreshToken });
  }

  async user(accessToken: string): Promise<ProviderUser> {
    const user = apiAnswer(this.name, 'the user', await this.get(accessToken, '/user'), userAnswer);
    return { id: String(user.id), login: user.login };
  }

  async repositories(accessToken: string): Promise<RepoGrant[]> {
    const grants: RepoGrant[] = [];
    for (let page = 1; grants.length < MAX_GRANTS; page++) {
      const listed = apiAnswer(this.name, 'installations', await this.get(accessToken, `/user/installations?per_page=${PER_PAGE}&page=${page}`), installationsAnswer);
      for (const installation of listed.installations) await this.installationRepos(accessToken, installation.id, grants);
      if (listed.installations.length < PER_PAGE) break;
    }
    return grants.slice(0, MAX_GRANTS);
  }

  private async installationRepos(accessToken: string, installationId: number, into: RepoGrant[]): Promise<void> {
    for (let page = 1; into.length < MAX_GRANTS; page++) {
      const path = `/user/installations/${installationId}/repositories?per_page=${PER_PAGE}&page=${page}`;
      const listed = apiAnswer(this.name, 'repositories', await this.get(accessToken, path), reposAnswer);
      for (const r of listed.repositories) into.push({ fullName: r.full_name, url: r.html_url, permissions: r.permissions ?? {} });
      if (listed.repositories.length < PER_PAGE) return;
    }
  }

  private token(form: Record<string, string>): Promise<TokenSet> {
    const url = new URL('/login/oauth/access_token', this.options.webUrl).toString();
    return postTokenForm(this.name, url, { client_id: this.options.clientId, client_secret: this.options.clientSecret, ...form }, this.options.timeoutMs);
  }

  private get(accessToken: string, path: string): Promise<{ status: number; body: unknown }> {
    const url = `${this.options.apiUrl.replace(/\/$/, '')}${path}`;
    const headers = { accept: 'application/vnd.github+json', authorization: `Bearer ${accessToken}`, 'x-github-api-version': '2022-11-28' };
    return providerFetch(this.name, url, { headers }, this.options.timeoutMs);
  }
}
