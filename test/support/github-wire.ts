/**
 * A loopback HTTP server implementing exactly the subset of GitHub's REST API the GitHub adapter
 * uses, as written in docs/forges.md "The GitHub wire contract": it verifies the app JWT's RS256
 * signature with the app's public key (and `iss`, `iat`, `exp` within 10 minutes), mints
 * installation tokens only for repositories and permissions the installation has, and checks each
 * repository call's token against the repository and permission it needs. A git client's first
 * request (`/<owner>/<repo>.git/info/refs`) is recorded and refused, so a test sees the header git
 * sent. `misbehave` scripts the next answer to a path (status, raw body, headers, delay).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes, verify, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface WireRepo { owner: string; name: string; defaultBranch: string; installationId: number; permissions: Record<string, 'read' | 'write'> }
export interface WirePull { number: number; head: string; base: string; title: string; body: string; draft: boolean; state: 'open' | 'closed' }
export interface WireToken { token: string; installationId: number; repositories: string[]; permissions: Record<string, string>; expiresAt: Date }
export interface WireRequest { method: string; path: string; authorization?: string; body?: unknown }
export interface Misbehaviour { status?: number; raw?: string | Buffer; headers?: Record<string, string>; delayMs?: number }

export interface GitHubWire {
  url: string;
  repos: WireRepo[];
  pulls: Map<string, WirePull[]>;
  tokens: WireToken[];
  requests: WireRequest[];
  /** Answers the next request whose path starts with `pathPrefix` with `how` instead. */
  misbehave(pathPrefix: string, how: Misbehaviour): void;
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

/** Starts the wire server for one app (`appId`, verified with `publicKey`) and its installed repositories. */
export async function startGitHubWire(options: { appId: string; publicKey: KeyObject; repos: WireRepo[] }): Promise<GitHubWire> {
  const wire = { repos: options.repos, pulls: new Map<string, WirePull[]>(), tokens: [] as WireToken[], requests: [] as WireRequest[] };
  const scripted: Array<{ prefix: string; how: Misbehaviour }> = [];
  const repoOf = (owner: string, name: string) => wire.repos.find((r) => r.owner === owner && r.name === name);

  /** The token of `authorization` if it covers `repo` with `permission` at `level`, else the refusal sent. */
  const tokenFor = (res: ServerResponse, authorization: string | undefined, repo: WireRepo, permission?: string, level?: 'read' | 'write'): WireToken | undefined => {
    const value = /^(?:token|Bearer) (\S+)$/i.exec(authorization ?? '')?.[1];
    const token = wire.tokens.find((t) => t.token === value && t.expiresAt.getTime() > Date.now());
    if (!token) return void send(res, 401, { message: 'Bad credentials' });
    if (!token.repositories.includes(repo.name) || token.installationId !== repo.installationId) return void send(res, 404, { message: 'Not Found' });
    const granted = permission ? token.permissions[permission] : 'read';
    if (permission && level && (!granted || LEVEL[granted as 'read' | 'write'] < LEVEL[level])) {
      return void send(res, 403, { message: 'Resource not accessible by integration' });
    }
    return token;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://wire');
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    wire.requests.push({ method: req.method ?? '', path: url.pathname + url.search, authorization: req.headers.authorization, body });
    const trick = scripted.findIndex((s) => url.pathname.startsWith(s.prefix));
    if (trick >= 0) {
      const how = scripted.splice(trick, 1)[0]!.how;
      if (how.delayMs) await new Promise((r) => setTimeout(r, how.delayMs));
      res.writeHead(how.status ?? 200, { 'content-type': 'application/json', ...how.headers });
      res.end(how.raw ?? '');
      return;
    }
    const parts = url.pathname.split('/').filter(Boolean);
    if (url.pathname.endsWith('/info/refs')) return void send(res, 401, { message: 'git refused (recorded)' });
    if (parts[0] === 'app' && parts[1] === 'installations' && parts[3] === 'access_tokens' && req.method === 'POST') {
      const jwt = checkJwt(req.headers.authorization, options.appId, options.publicKey);
      if (typeof jwt === 'string') return send(res, 401, { message: `A JSON web token could not be decoded (${jwt})` });
      const id = Number(parts[2]);
      const asked = body as { repositories?: unknown; permissions?: unknown } | undefined;
      const names = Array.isArray(asked?.repositories) ? asked.repositories.map(String) : [];
      const permissions = (asked?.permissions ?? {}) as Record<string, 'read' | 'write'>;
      const repos = names.map((n) => wire.repos.find((r) => r.installationId === id && r.name === n));
      if (names.length === 0 || repos.some((r) => !r)) return send(res, 422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.' });
      for (const [perm, level] of Object.entries(permissions)) {
        if (!repos.every((r) => r!.permissions[perm] && LEVEL[r!.permissions[perm]] >= LEVEL[level])) return send(res, 422, { message: `The permissions requested are not granted to this installation (${perm})` });
      }
      const token: WireToken = { token: `ghs_${randomBytes(18).toString('hex')}`, installationId: id, repositories: names, permissions, expiresAt: new Date(Date.now() + 3600_000) };
      wire.tokens.push(token);
      return send(res, 201, { token: token.token, expires_at: token.expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'), permissions, repository_selection: 'selected' });
    }
    if (parts[0] !== 'repos' || parts.length < 3) return send(res, 404, { message: 'Not Found' });
    const repo = repoOf(parts[1] ?? '', parts[2] ?? '');
    if (parts[3] === 'installation' && parts.length === 4 && req.method === 'GET') {
      const jwt = checkJwt(req.headers.authorization, options.appId, options.publicKey);
      if (typeof jwt === 'string') return send(res, 401, { message: `A JSON web token could not be decoded (${jwt})` });
      return repo ? send(res, 200, { id: repo.installationId, app_id: Number(options.appId) }) : send(res, 404, { message: 'Not Found' });
    }
    if (!repo) return send(res, 404, { message: 'Not Found' });
    const key = `${repo.owner}/${repo.name}`;
    const pulls = wire.pulls.get(key) ?? [];
    wire.pulls.set(key, pulls);
    const view = (p: WirePull) => ({
      number: p.number, html_url: `${wireUrl}/${key}/pull/${p.number}`, state: p.state, draft: p.draft, title: p.title, body: p.body,
      head: { ref: p.head, label: `${repo.owner}:${p.head}` }, base: { ref: p.base },
    });
    if (parts.length === 3 && req.method === 'GET') {
      if (!tokenFor(res, req.headers.authorization, repo)) return;
      return send(res, 200, { name: repo.name, full_name: key, private: true, default_branch: repo.defaultBranch });
    }
    if (parts.length === 4 && parts[3] === 'pulls' && req.method === 'GET') {
      if (!tokenFor(res, req.headers.authorization, repo, 'pull_requests', 'read')) return;
      const head = url.searchParams.get('head');
      const state = url.searchParams.get('state') ?? 'open';
      return send(res, 200, pulls.filter((p) => (state === 'all' || p.state === state) && (!head || `${repo.owner}:${p.head}` === head)).map(view));
    }
    if (parts.length === 4 && parts[3] === 'pulls' && req.method === 'POST') {
      if (!tokenFor(res, req.headers.authorization, repo, 'pull_requests', 'write')) return;
      const input = body as { title?: unknown; head?: unknown; base?: unknown; body?: unknown; draft?: unknown };
      if (typeof input.title !== 'string' || typeof input.head !== 'string' || typeof input.base !== 'string') return send(res, 422, { message: 'Validation Failed' });
      if (pulls.some((p) => p.state === 'open' && p.head === input.head)) return send(res, 422, { message: `A pull request already exists for ${repo.owner}:${input.head}.` });
      const pull: WirePull = { number: pulls.length + 1, head: input.head, base: input.base, title: input.title, body: typeof input.body === 'string' ? input.body : '', draft: input.draft === true, state: 'open' };
      pulls.push(pull);
      return send(res, 201, view(pull));
    }
    return send(res, 404, { message: 'Not Found' });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => send(res, 500, { message: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const wireUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ...wire,
    url: wireUrl,
    misbehave: (prefix, how) => void scripted.push({ prefix, how }),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
