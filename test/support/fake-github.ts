/**
 * A loopback GitHub for the source-control app's OAuth and account wire: a real HTTP server on
 * 127.0.0.1 implementing exactly the subset docs/source-control.md ("GitHub wire") documents:
 * `GET /login/oauth/authorize` (the signed-in user, named by the `fake_github_user` cookie,
 * consents at once: 302 to `redirect_uri` with `code` and `state`), `POST
 * /login/oauth/access_token` (code exchange and single-use refresh; errors as 200 with `error`,
 * as GitHub does), `GET /user`, `GET /user/installations` and
 * `GET /user/installations/{id}/repositories` (paged by `per_page`, `page`).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeGithubUser {
  id: number;
  login: string;
  /** Installation id → full names of the repositories it grants this user. */
  installations: Record<number, string[]>;
}

interface Token {
  login: string;
  expiresAt: number;
  used?: boolean;
}

export interface FakeGithub {
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Users by login (add or change freely). */
  readonly users: Map<string, FakeGithubUser>;
  /** Lifetimes of the tokens it issues from now on, seconds (GitHub: 28800 and 15897600). */
  ttl: { access: number; refresh: number };
  /** When set, every request gets 503 (the provider is down). */
  down: boolean;
  /** Delay of a refresh answer, ms. */
  refreshDelayMs: number;
  /** How many refresh grants were asked for, and how many spent a refresh token. */
  readonly counts: { refreshAsked: number; refreshGranted: number; tokenRequests: number };
  /** Every access and refresh token it issued (to assert none is stored in clear). */
  readonly issued: string[];
  /** Invalidates every token of `login` (the user revoked the app). */
  revoke(login: string): void;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if ((req.headers['content-type'] ?? '').includes('json')) return new URLSearchParams(JSON.parse(raw || '{}') as Record<string, string>);
  return new URLSearchParams(raw);
}

function page<T>(items: T[], query: URLSearchParams): T[] {
  const perPage = Math.min(Number(query.get('per_page') ?? 30), 100);
  const n = Number(query.get('page') ?? 1);
  return items.slice((n - 1) * perPage, n * perPage);
}

/** The loopback GitHub's state and handlers (see the header); made by {@link startFakeGithub}. */
class FakeGithubServer implements FakeGithub {
  url = '';
  readonly clientId = 'Iv1.fakeclient';
  readonly clientSecret = 'fake-client-secret';
  readonly users = new Map<string, FakeGithubUser>();
  ttl = { access: 28_800, refresh: 15_897_600 };
  down = false;
  refreshDelayMs = 0;
  readonly counts = { refreshAsked: 0, refreshGranted: 0, tokenRequests: 0 };
  readonly issued: string[] = [];
  private readonly codes = new Map<string, Token>();
  private readonly access = new Map<string, Token>();
  private readonly refreshTokens = new Map<string, Token>();
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((req, res) => this.handle(req, res));

  constructor(private readonly redirectUri: string) {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  revoke(login: string): void {
    for (const map of [this.access, this.refreshTokens]) for (const [k, v] of map) if (v.login === login) map.delete(k);
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (this.down) return send(res, 503, { message: 'down' });
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') return this.authorize(req, res, url.searchParams);
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      this.tokenEndpoint(req, res).catch(() => send(res, 500, { message: 'fake failed' }));
      return;
    }
    if (req.method === 'GET') return this.api(req, res, url.pathname, url.searchParams);
    return send(res, 404, { message: 'Not Found' });
  }

  private issue(login: string): Record<string, unknown> {
    const token = (prefix: string) => `${prefix}_${randomBytes(18).toString('base64url')}`;
    const pair = { access_token: token('ghu'), refresh_token: token('ghr') };
    this.access.set(pair.access_token, { login, expiresAt: Date.now() + this.ttl.access * 1000 });
    this.refreshTokens.set(pair.refresh_token, { login, expiresAt: Date.now() + this.ttl.refresh * 1000 });
    this.issued.push(pair.access_token, pair.refresh_token);
    return { ...pair, expires_in: this.ttl.access, refresh_token_expires_in: this.ttl.refresh, scope: '', token_type: 'bearer' };
  }

  private async tokenEndpoint(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    this.counts.tokenRequests += 1;
    if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret) return send(res, 200, { error: 'incorrect_client_credentials' });
    if (form.get('grant_type') === 'refresh_token') {
      this.counts.refreshAsked += 1;
      if (this.refreshDelayMs) await new Promise((r) => setTimeout(r, this.refreshDelayMs));
      const held = this.refreshTokens.get(form.get('refresh_token') ?? '');
      if (!held || held.used || held.expiresAt <= Date.now()) return send(res, 200, { error: 'bad_refresh_token' });
      held.used = true;
      this.counts.refreshGranted += 1;
      return send(res, 200, this.issue(held.login));
    }
    const code = this.codes.get(form.get('code') ?? '');
    if (!code || code.used || code.expiresAt <= Date.now()) return send(res, 200, { error: 'bad_verification_code' });
    if (form.has('redirect_uri') && form.get('redirect_uri') !== this.redirectUri) return send(res, 200, { error: 'redirect_uri_mismatch' });
    code.used = true;
    return send(res, 200, this.issue(code.login));
  }

  private authorize(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): void {
    const login = /fake_github_user=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (!login || !this.users.has(login)) return send(res, 401, { message: 'sign in first' });
    const state = query.get('state');
    if (query.get('client_id') !== this.clientId || query.get('redirect_uri') !== this.redirectUri || !state) return send(res, 400, { message: 'bad authorize request' });
    const code = randomBytes(10).toString('hex');
    this.codes.set(code, { login, expiresAt: Date.now() + 600_000 });
    const to = new URL(this.redirectUri);
    to.searchParams.set('code', code);
    to.searchParams.set('state', state);
    res.writeHead(302, { location: to.toString() });
    res.end();
  }

  private api(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): void {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const held = this.access.get(bearer);
    const user = held && held.expiresAt > Date.now() ? this.users.get(held.login) : undefined;
    if (!user) return send(res, 401, { message: 'Bad credentials' });
    if (path === '/user') return send(res, 200, { id: user.id, login: user.login, type: 'User' });
    if (path === '/user/installations') {
      const all = Object.keys(user.installations).map((id) => ({ id: Number(id), account: { login: user.login } }));
      return send(res, 200, { total_count: all.length, installations: page(all, query) });
    }
    const installation = /^\/user\/installations\/(\d+)\/repositories$/.exec(path)?.[1];
    const names = installation === undefined ? undefined : user.installations[Number(installation)];
    if (!names) return send(res, 404, { message: 'Not Found' });
    const repos = names.map((full_name) => ({ full_name, html_url: `${this.url}/${full_name}`, private: true, permissions: { admin: false, push: true, pull: true } }));
    return send(res, 200, { total_count: repos.length, repositories: page(repos, query) });
  }
}

/** Starts the loopback GitHub; `redirectUri` is the only callback URL its app accepts. */
export async function startFakeGithub(redirectUri: string): Promise<FakeGithub> {
  const fake = new FakeGithubServer(redirectUri);
  await fake.listen();
  return fake;
}
