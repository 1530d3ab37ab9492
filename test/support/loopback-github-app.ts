/**
 * The loopback GitHub's app wire (test/support/loopback-github.ts), exactly the subset the GitHub
 * adapter uses, as written in docs/forges.md "The GitHub wire contract": it verifies the app JWT's
 * RS256 signature with the app's public key (and `iss`, `iat`, `exp` within 10 minutes), mints
 * installation tokens only for repositories and permissions the installation has, and checks each
 * repository call's token against the repository and permission it needs. A git client's first
 * request (`/<owner>/<repo>.git/info/refs`) is recorded and refused, so a test sees the header git sent.
 */
import { randomBytes, verify, type KeyObject } from 'node:crypto';
import type { GithubCall, GithubPull, GithubRepo, InstallationToken, LoopbackGithub } from './loopback-github';

const LEVEL = { read: 1, write: 2 } as const;

/** The payload of a valid app JWT, or the reason it is not one. */
function checkJwt(header: string | undefined, app: { appId: string; publicKey: KeyObject } | undefined): string | { iat: number; exp: number } {
  if (!app) return 'no app is configured';
  const match = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/i.exec(header ?? '');
  if (!match) return 'no bearer JWT';
  const [, head = '', payload = '', signature = ''] = match;
  const jose = JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg?: string };
  if (jose.alg !== 'RS256') return 'alg is not RS256';
  if (!verify('sha256', Buffer.from(`${head}.${payload}`), app.publicKey, Buffer.from(signature, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { iat?: number; exp?: number; iss?: unknown };
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== app.appId) return 'iss is not the app id';
  if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return 'iat/exp missing';
  if (claims.exp - claims.iat > 600 || claims.exp <= now || claims.iat > now + 60) return 'iat/exp out of bounds';
  return { iat: claims.iat, exp: claims.exp };
}

/** The app wire's routes, one method per documented call, over the repositories, pulls and tokens of the shared state. */
export class AppWire {
  constructor(private readonly github: LoopbackGithub, private readonly app?: { appId: string; publicKey: KeyObject }) {}

  /** Answers `call` if it is a git, app or repository call; false otherwise. */
  route(call: GithubCall): boolean {
    const { req, url, parts, answer } = call;
    const [top, second, , fourth] = parts;
    if (url.pathname.endsWith('/info/refs')) answer(401, { message: 'git refused (recorded)' });
    else if (top === 'app' && second === 'installations' && fourth === 'access_tokens' && req.method === 'POST') this.mintToken(call);
    else if (top === 'repos' && parts.length >= 3) this.repoCall(call);
    else return false;
    return true;
  }

  /** `POST /app/installations/{id}/access_tokens`: only repositories and permissions the installation has. */
  private mintToken({ req, parts, body, answer }: GithubCall): void {
    const jwt = checkJwt(req.headers.authorization, this.app);
    if (typeof jwt === 'string') return answer(401, { message: `A JSON web token could not be decoded (${jwt})` });
    const id = Number(parts[2]);
    const asked = body as { repositories?: unknown; permissions?: unknown } | undefined;
    const names = Array.isArray(asked?.repositories) ? asked.repositories.map(String) : [];
    const permissions = (asked?.permissions ?? {}) as Record<string, 'read' | 'write'>;
    const repos = names.map((n) => this.github.repos.find((r) => r.installationId === id && r.name === n));
    if (names.length === 0 || repos.some((r) => !r)) return answer(422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.' });
    for (const [perm, level] of Object.entries(permissions)) {
      if (!repos.every((r) => r!.permissions[perm] && LEVEL[r!.permissions[perm]] >= LEVEL[level])) return answer(422, { message: `The permissions requested are not granted to this installation (${perm})` });
    }
    const token: InstallationToken = { token: `ghs_${randomBytes(18).toString('hex')}`, installationId: id, repositories: names, permissions, expiresAt: new Date(Date.now() + 3600_000) };
    this.github.tokens.push(token);
    answer(201, { token: token.token, expires_at: token.expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'), permissions, repository_selection: 'selected' });
  }

  /** `GET /repos/{o}/{r}/installation` (app JWT), `GET /repos/{o}/{r}` and the pulls (installation token). */
  private repoCall(call: GithubCall): void {
    const { req, parts, answer } = call;
    const repo = this.github.repos.find((r) => r.owner === parts[1] && r.name === parts[2]);
    if (parts[3] === 'installation' && parts.length === 4 && req.method === 'GET') {
      const jwt = checkJwt(req.headers.authorization, this.app);
      if (typeof jwt === 'string') return answer(401, { message: `A JSON web token could not be decoded (${jwt})` });
      return repo ? answer(200, { id: repo.installationId, app_id: Number(this.app?.appId) }) : answer(404, { message: 'Not Found' });
    }
    if (!repo) return answer(404, { message: 'Not Found' });
    if (parts.length === 3 && req.method === 'GET') {
      if (!this.tokenFor(call, repo)) return;
      return answer(200, { name: repo.name, full_name: `${repo.owner}/${repo.name}`, private: true, default_branch: repo.defaultBranch });
    }
    if (parts.length === 4 && parts[3] === 'pulls') return this.pullsCall(call, repo);
    answer(404, { message: 'Not Found' });
  }

  /** `GET /repos/{o}/{r}/pulls?head=&state=` (pull_requests read) and `POST /repos/{o}/{r}/pulls` (pull_requests write). */
  private pullsCall(call: GithubCall, repo: GithubRepo): void {
    const { req, url, body, answer } = call;
    const key = `${repo.owner}/${repo.name}`;
    const pulls = this.github.pulls.get(key) ?? [];
    this.github.pulls.set(key, pulls);
    const view = (p: GithubPull) => ({
      number: p.number, html_url: `${this.github.url}/${key}/pull/${p.number}`, state: p.state, draft: p.draft, title: p.title, body: p.body,
      head: { ref: p.head, label: `${repo.owner}:${p.head}` }, base: { ref: p.base },
    });
    if (req.method === 'GET') {
      if (!this.tokenFor(call, repo, 'pull_requests', 'read')) return;
      const head = url.searchParams.get('head');
      const state = url.searchParams.get('state') ?? 'open';
      return answer(200, pulls.filter((p) => (state === 'all' || p.state === state) && (!head || `${repo.owner}:${p.head}` === head)).map(view));
    }
    if (!this.tokenFor(call, repo, 'pull_requests', 'write')) return;
    const input = body as { title?: unknown; head?: unknown; base?: unknown; body?: unknown; draft?: unknown };
    if (typeof input.title !== 'string' || typeof input.head !== 'string' || typeof input.base !== 'string') return answer(422, { message: 'Validation Failed' });
    if (pulls.some((p) => p.state === 'open' && p.head === input.head)) return answer(422, { message: `A pull request already exists for ${repo.owner}:${input.head}.` });
    const pull: GithubPull = { number: pulls.length + 1, head: input.head, base: input.base, title: input.title, body: typeof input.body === 'string' ? input.body : '', draft: input.draft === true, state: 'open' };
    pulls.push(pull);
    answer(201, view(pull));
  }

  /** The token of the call's authorization if it covers `repo` (with `permission` at `level`), else undefined and the refusal sent. */
  private tokenFor({ req, answer }: GithubCall, repo: GithubRepo, permission?: string, level?: 'read' | 'write'): InstallationToken | undefined {
    const value = /^(?:token|Bearer) (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const token = this.github.tokens.find((t) => t.token === value && t.expiresAt.getTime() > Date.now());
    if (!token) return void answer(401, { message: 'Bad credentials' });
    if (!token.repositories.includes(repo.name) || token.installationId !== repo.installationId) return void answer(404, { message: 'Not Found' });
    const granted = permission ? token.permissions[permission] : 'read';
    if (permission && level && (!granted || LEVEL[granted as 'read' | 'write'] < LEVEL[level])) {
      return void answer(403, { message: 'Resource not accessible by integration' });
    }
    return token;
  }
}
