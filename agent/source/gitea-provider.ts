/**
 * Gitea as the second source-control provider (docs/source-control.md, "Gitea wire"): OAuth2
 * authorization code with PKCE (S256) at `<base>/login/oauth/authorize` and
 * `<base>/login/oauth/access_token` (refresh tokens are single-use there too), the account from
 * `GET <base>/api/v1/user`, and the repositories the user may access from
 * `GET <base>/api/v1/user/repos` (owned, collaborator and organization repositories).
 */
import { z } from 'zod';
import { apiAnswer, MAX_GRANTS, postTokenForm, providerFetch, providerText, type ProviderUser, type RepoGrant, type ScmProvider, type TokenSet } from './provider';

export interface GiteaProviderOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUrl: string;
  timeoutMs: number;
}

const PER_PAGE = 50;
const userAnswer = z.object({ id: z.number().int(), login: providerText(100) });
const reposAnswer = z.array(z.object({
  full_name: providerText(300),
  html_url: providerText(1000),
  permissions: z.record(z.string().max(64), z.boolean()).optional(),
})).max(PER_PAGE);

/** A Gitea forge's OAuth2 application. */
export class GiteaProvider implements ScmProvider {
  readonly name = 'gitea' as const;
  readonly pkce = true;

  constructor(private readonly options: GiteaProviderOptions) {}

  authorizeUrl(state: string, codeChallenge?: string): string {
    if (!codeChallenge) throw new Error('Gitea links need a PKCE code challenge');
    const url = new URL('login/oauth/authorize', this.base());
    url.search = new URLSearchParams({
      client_id: this.options.clientId, redirect_uri: this.options.redirectUrl, response_type: 'code', state,
      code_challenge: codeChallenge, code_challenge_method: 'S256',
    }).toString();
    return url.toString();
  }

  exchangeCode(code: string, codeVerifier?: string): Promise<TokenSet> {
    if (!codeVerifier) throw new Error('Gitea links need the PKCE code verifier');
    return this.token({ grant_type: 'authorization_code', code, redirect_uri: this.options.redirectUrl, code_verifier: codeVerifier });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return this.token({ grant_type: 'refresh_token', refresh_token: refreshToken });
  }

  async user(accessToken: string): Promise<ProviderUser> {
    const user = apiAnswer(this.name, 'the user', await this.get(accessToken, 'api/v1/user'), userAnswer);
    return { id: String(user.id), login: user.login };
  }

  async repositories(accessToken: string): Promise<RepoGrant[]> {
    const grants: RepoGrant[] = [];
    for (let page = 1; grants.length < MAX_GRANTS; page++) {
      const listed = apiAnswer(this.name, 'repositories', await this.get(accessToken, `api/v1/user/repos?limit=${PER_PAGE}&page=${page}`), reposAnswer);
      for (const r of listed) grants.push({ fullName: r.full_name, url: r.html_url, permissions: r.permissions ?? {} });
      if (listed.length < PER_PAGE) break;
    }
    return grants.slice(0, MAX_GRANTS);
  }

  private base(): string {
    return this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`;
  }

  private token(form: Record<string, string>): Promise<TokenSet> {
    const url = new URL('login/oauth/access_token', this.base()).toString();
    return postTokenForm(this.name, url, { client_id: this.options.clientId, client_secret: this.options.clientSecret, ...form }, this.options.timeoutMs);
  }

  private get(accessToken: string, path: string): Promise<{ status: number; body: unknown }> {
    return providerFetch(this.name, new URL(path, this.base()).toString(), { headers: { accept: 'application/json', authorization: `Bearer ${accessToken}` } }, this.options.timeoutMs);
  }
}
