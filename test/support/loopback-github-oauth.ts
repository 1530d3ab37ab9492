/**
 * The loopback GitHub's OAuth user wire (test/support/loopback-github.ts), exactly the subset
 * docs/source-control.md ("GitHub wire") documents: `GET /login/oauth/authorize` (the signed-in
 * user, named by the `fake_github_user` cookie, consents at once: 302 to `redirect_uri` with `code`
 * and `state`), `POST /login/oauth/access_token` (code exchange and single-use refresh; errors as
 * 200 with `error`, as GitHub does), `GET /user`, `GET /user/installations` and
 * `GET /user/installations/{id}/repositories` (paged by `per_page`, `page`).
 */
import { randomBytes } from 'node:crypto';
import type { GithubCall, LoopbackGithub } from './loopback-github';

interface Token {
  login: string;
  expiresAt: number;
  used?: boolean;
}

function page<T>(items: T[], query: URLSearchParams): T[] {
  const perPage = Math.min(Number(query.get('per_page') ?? 30), 100);
  const n = Number(query.get('page') ?? 1);
  return items.slice((n - 1) * perPage, n * perPage);
}

/** The OAuth wire's codes and user tokens, over the users of the shared state. */
export class OauthWire {
  private readonly codes = new Map<string, Token>();
  private readonly access = new Map<string, Token>();
  private readonly refreshTokens = new Map<string, Token>();

  constructor(private readonly github: LoopbackGithub, private readonly redirectUri?: string) {}

  /** Answers `call` if it is an OAuth or user call; false otherwise. */
  async route(call: GithubCall): Promise<boolean> {
    const { req, url } = call;
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') this.authorize(call);
    else if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') await this.tokenEndpoint(call);
    else if (req.method === 'GET' && (url.pathname === '/user' || url.pathname.startsWith('/user/'))) this.user(call);
    else return false;
    return true;
  }

  /** Invalidates every token of `login`. */
  revoke(login: string): void {
    for (const map of [this.access, this.refreshTokens]) for (const [k, v] of map) if (v.login === login) map.delete(k);
  }

  private issue(login: string): Record<string, unknown> {
    const { ttl, issued } = this.github;
    const token = (prefix: string) => `${prefix}_${randomBytes(18).toString('base64url')}`;
    const pair = { access_token: token('ghu'), refresh_token: token('ghr') };
    this.access.set(pair.access_token, { login, expiresAt: Date.now() + ttl.access * 1000 });
    this.refreshTokens.set(pair.refresh_token, { login, expiresAt: Date.now() + ttl.refresh * 1000 });
    issued.push(pair.access_token, pair.refresh_token);
    return { ...pair, expires_in: ttl.access, refresh_token_expires_in: ttl.refresh, scope: '', token_type: 'bearer' };
  }

  private async tokenEndpoint({ body, answer }: GithubCall): Promise<void> {
    const form = new URLSearchParams((body ?? {}) as Record<string, string>);
    const { counts } = this.github;
    counts.tokenRequests += 1;
    if (form.get('client_id') !== this.github.clientId || form.get('client_secret') !== this.github.clientSecret) return answer(200, { error: 'incorrect_client_credentials' });
    if (form.get('grant_type') === 'refresh_token') {
      counts.refreshAsked += 1;
      if (this.github.refreshDelayMs) await new Promise((r) => setTimeout(r, this.github.refreshDelayMs));
      const held = this.refreshTokens.get(form.get('refresh_token') ?? '');
      if (!held || held.used || held.expiresAt <= Date.now()) return answer(200, { error: 'bad_refresh_token' });
      held.used = true;
      counts.refreshGranted += 1;
      return answer(200, this.issue(held.login));
    }
    const code = this.codes.get(form.get('code') ?? '');
    if (!code || code.used || code.expiresAt <= Date.now()) return answer(200, { error: 'bad_verification_code' });
    if (form.has('redirect_uri') && form.get('redirect_uri') !== this.redirectUri) return answer(200, { error: 'redirect_uri_mismatch' });
    code.used = true;
    return answer(200, this.issue(code.login));
  }

  private authorize({ req, url, answer }: GithubCall): void {
    const query = url.searchParams;
    const login = /fake_github_user=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (!login || !this.github.users.has(login)) return answer(401, { message: 'sign in first' });
    const state = query.get('state');
    if (query.get('client_id') !== this.github.clientId || !this.redirectUri || query.get('redirect_uri') !== this.redirectUri || !state) return answer(400, { message: 'bad authorize request' });
    const code = randomBytes(10).toString('hex');
    this.codes.set(code, { login, expiresAt: Date.now() + 600_000 });
    const to = new URL(this.redirectUri);
    to.searchParams.set('code', code);
    to.searchParams.set('state', state);
    answer(302, undefined, { location: to.toString() });
  }

  /** `/user`, `/user/installations` and `/user/installations/{id}/repositories` with a user token. */
  private user({ req, url, answer }: GithubCall): void {
    const { pathname: path, searchParams: query } = url;
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const held = this.access.get(bearer);
    const user = held && held.expiresAt > Date.now() ? this.github.users.get(held.login) : undefined;
    if (!user) return answer(401, { message: 'Bad credentials' });
    if (path === '/user') return answer(200, { id: user.id, login: user.login, type: 'User' });
    if (path === '/user/installations') {
      const all = Object.keys(user.installations).map((id) => ({ id: Number(id), account: { login: user.login } }));
      return answer(200, { total_count: all.length, installations: page(all, query) });
    }
    const installation = /^\/user\/installations\/(\d+)\/repositories$/.exec(path)?.[1];
    const names = installation === undefined ? undefined : user.installations[Number(installation)];
    if (!names) return answer(404, { message: 'Not Found' });
    const repos = names.map((full_name) => ({ full_name, html_url: `${this.github.url}/${full_name}`, private: true, permissions: { admin: false, push: true, pull: true } }));
    return answer(200, { total_count: repos.length, repositories: page(repos, query) });
  }
}
