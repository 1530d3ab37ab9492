/**
 * A loopback HTTP server implementing exactly the subset of GitHub's REST API the GitHub adapter
 * uses, as written in docs/forges.md "The GitHub wire contract": it verifies the app JWT's RS256
 * signature with the app's public key (and `iss`, `iat`, `exp` within 10 minutes), mints
 * installation tokens only for repositories and permissions the installation has, and checks each
 * repository call's token against the repository and permission it needs. A git client's first
 * request (`/<owner>/<repo>.git/info/refs`) is recorded and refused, so a test sees the header git
 * sent. (Hostile answers are the conformance suite's own loopback server: test/support/forge-conformance.ts.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes, verify, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface WireRepo { owner: string; name: string; defaultBranch: string; installationId: number; permissions: Record<string, 'read' | 'write'> }
export interface WirePull { number: number; head: string; base: string; title: string; body: string; draft: boolean; state: 'open' | 'closed' }
export interface WireToken { token: string; installationId: number; repositories: string[]; permissions: Record<string, string>; expiresAt: Date }
export interface WireRequest { method: string; path: string; authorization?: string; body?: unknown }

export interface GitHubWire {
  url: string;
  repos: WireRepo[];
  pulls: Map<string, WirePull[]>;
  tokens: WireToken[];
  requests: WireRequest[];
  close(): Promise<void>;
}

const LEVEL = { read: 1, write: 2 } as const;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** The payload of a valid app JWT, or the reason it is not one. */
function checkJwt(header: string | undefined, appId: string, publicKey: KeyObject): string | { iat: number; exp: number } {
  const match = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/i.exec(header ?? '');
  if (!match) return 'no bearer JWT';
  const [, head = '', payload = '', signature = ''] = match;
  const jose = JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg?: string };
  if (jose.alg !== 'RS256') return 'alg is not RS256';
  if (!verify('sha256', Buffer.from(`${head}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { iat?: number; exp?: number; iss?: unknown };
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== appId) return 'iss is not the app id';
  if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return 'iat/exp missing';
  if (claims.exp - claims.iat > 600 || claims.exp <= now || claims.iat > now + 60) return 'iat/exp out of bounds';
  return { iat: claims.iat, exp: claims.exp };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

type Options = { appId: string; publicKey: KeyObject; repos: WireRepo[] };
type Call = { req: IncomingMessage; res: ServerResponse; url: URL; parts: string[]; body: unknown };

/** The wire's state and its routes, one method per documented call. */
class Wire {
  readonly pulls = new Map<string, WirePull[]>();
  readonly tokens: WireToken[] = [];
  readonly requests: WireRequest[] = [];
  url = '';

  constructor(private readonly options: Options) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://wire');
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    this.requests.push({ method: req.method ?? '', path: url.pathname + url.search, authorization: req.headers.authorization, body });
    const call: Call = { req, res, url, parts: url.pathname.split('/').filter(Boolean), body };
    if (url.pathname.endsWith('/info/refs')) return send(res, 401, { message: 'git refused (recorded)' });
    const [top, second, , fourth] = call.parts;
    if (top === 'app' && second === 'installations' && fourth === 'access_tokens' && req.method === 'POST') return this.mintToken(call);
    if (top === 'repos' && call.parts.length >= 3) return this.repoCall(call);
    send(res, 404, { message: 'Not Found' });
  }

  /** `POST /app/installations/{id}/access_tokens`: only repositories and permissions the installation has. */
  private mintToken({ req, res, parts, body }: Call): void {
    const jwt = checkJwt(req.headers.authorization, this.options.appId, this.options.publicKey);
    if (typeof jwt === 'string') return send(res, 401, { message: `A JSON web token could not be decoded (${jwt})` });
    const id = Number(parts[2]);
    const asked = body as { repositories?: unknown; permissions?: unknown } | undefined;
    const names = Array.isArray(asked?.repositories) ? asked.repositories.map(String) : [];
    const permissions = (asked?.permissions ?? {}) as Record<string, 'read' | 'write'>;
    const repos = names.map((n) => this.options.repos.find((r) => r.installationId === id && r.name === n));
    if (names.length === 0 || repos.some((r) => !r)) return send(res, 422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.' });
    for (const [perm, level] of Object.entries(permissions)) {
      if (!repos.every((r) => r!.permissions[perm] && LEVEL[r!.permissions[perm]] >= LEVEL[level])) return send(res, 422, { message: `The permissions requested are not granted to this installation (${perm})` });
    }
    const token: WireToken = { token: `ghs_${randomBytes(18).toString('hex')}`, installationId: id, repositories: names, permissions, expiresAt: new Date(Date.now() + 3600_000) };
    this.tokens.push(token);
    send(res, 201, { token: token.token, expires_at: token.expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'), permissions, repository_selection: 'selected' });
  }

  /** `GET /repos/{o}/{r}/installation` (app JWT), `GET /repos/{o}/{r}` and the pulls (installation token). */
  private repoCall(call: Call): void {
    const { req, res, parts } = call;
    const repo = this.options.repos.find((r) => r.owner === parts[1] && r.name === parts[2]);
    if (parts[3] === 'installation' && parts.length === 4 && req.method === 'GET') {
      const jwt = checkJwt(req.headers.authorization, this.options.appId, this.options.publicKey);
      if (typeof jwt === 'string') return send(res, 401, { message: `A JSON web token could not be decoded (${jwt})` });
      return repo ? send(res, 200, { id: repo.installationId, app_id: Number(this.options.appId) }) : send(res, 404, { message: 'Not Found' });
    }
    if (!repo) return send(res, 404, { message: 'Not Found' });
    if (parts.length === 3 && req.method === 'GET') {
      if (!this.tokenFor(res, req.headers.authorization, repo)) return;
      return send(res, 200, { name: repo.name, full_name: `${repo.owner}/${repo.name}`, private: true, default_branch: repo.defaultBranch });
    }
    if (parts.length === 4 && parts[3] === 'pulls') return this.pullsCall(call, repo);
    send(res, 404, { message: 'Not Found' });
  }

  /** `GET /repos/{o}/{r}/pulls?head=&state=` (pull_requests read) and `POST /repos/{o}/{r}/pulls` (pull_requests write). */
  private pullsCall({ req, res, url, body }: Call, repo: WireRepo): void {
    const key = `${repo.owner}/${repo.name}`;
    const pulls = this.pulls.get(key) ?? [];
    this.pulls.set(key, pulls);
    const view = (p: WirePull) => ({
      number: p.number, html_url: `${this.url}/${key}/pull/${p.number}`, state: p.state, draft: p.draft, title: p.title, body: p.body,
      head: { ref: p.head, label: `${repo.owner}:${p.head}` }, base: { ref: p.base },
    });
    if (req.method === 'GET') {
      if (!this.tokenFor(res, req.headers.authorization, repo, 'pull_requests', 'read')) return;
      const head = url.searchParams.get('head');
      const state = url.searchParams.get('state') ?? 'open';
      return send(res, 200, pulls.filter((p) => (state === 'all' || p.state === state) && (!head || `${repo.owner}:${p.head}` === head)).map(view));
    }
    if (!this.tokenFor(res, req.headers.authorization, repo, 'pull_requests', 'write')) return;
    const input = body as { title?: unknown; head?: unknown; base?: unknown; body?: unknown; draft?: unknown };
    if (typeof input.title !== 'string' || typeof input.head !== 'string' || typeof input.base !== 'string') return send(res, 422, { message: 'Validation Failed' });
    if (pulls.some((p) => p.state === 'open' && p.head === input.head)) return send(res, 422, { message: `A pull request already exists for ${repo.owner}:${input.head}.` });
    const pull: WirePull = { number: pulls.length + 1, head: input.head, base: input.base, title: input.title, body: typeof input.body === 'string' ? input.body : '', draft: input.draft === true, state: 'open' };
    pulls.push(pull);
    send(res, 201, view(pull));
  }

  /** The token of `authorization` if it covers `repo` (with `permission` at `level`), else undefined and the refusal sent. */
  private tokenFor(res: ServerResponse, authorization: string | undefined, repo: WireRepo, permission?: string, level?: 'read' | 'write'): WireToken | undefined {
    const value = /^(?:token|Bearer) (\S+)$/i.exec(authorization ?? '')?.[1];
    const token = this.tokens.find((t) => t.token === value && t.expiresAt.getTime() > Date.now());
    if (!token) return void send(res, 401, { message: 'Bad credentials' });
    if (!token.repositories.includes(repo.name) || token.installationId !== repo.installationId) return void send(res, 404, { message: 'Not Found' });
    const granted = permission ? token.permissions[permission] : 'read';
    if (permission && level && (!granted || LEVEL[granted as 'read' | 'write'] < LEVEL[level])) {
      return void send(res, 403, { message: 'Resource not accessible by integration' });
    }
    return token;
  }
}

/** Starts the wire server for one app (`appId`, verified with `publicKey`) and its installed repositories. */
export async function startGitHubWire(options: Options): Promise<GitHubWire> {
  const wire = new Wire(options);
  const server: Server = createServer((req, res) => {
    wire.handle(req, res).catch((err: unknown) => send(res, 500, { message: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  wire.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: wire.url, repos: options.repos, pulls: wire.pulls, tokens: wire.tokens, requests: wire.requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
