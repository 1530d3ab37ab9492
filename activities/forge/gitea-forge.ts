/**
 * The Gitea adapter of the forge seam (docs/forges.md "Gitea"), over Gitea's REST API `/api/v1`
 * with a site administrator's credential (basic auth), through bounded HTTP (forge-http.ts).
 *
 * Tokens: Gitea has neither installation tokens nor tokens limited to one repository or expiring
 * by themselves. Each repository gets two restricted service users, a reader (`read` collaborator)
 * and a writer (`write` collaborator); a clone token is a `read:repository` token of the reader, a
 * repo token a `write:repository` token of the writer. A restricted user sees only what it is
 * explicitly given, so such a token reaches that one repository. A token's name carries its end;
 * each mint deletes the service user's tokens that have ended, so a token outlives `expiresAt`
 * until the next mint for that repository (the documented limit).
 *
 * Drafts: Gitea marks a pull request work-in-progress by a title prefix
 * (`[repository.pull-request] WORK_IN_PROGRESS_PREFIXES`, default `WIP:` and `[WIP]`); the adapter
 * prefixes the title and reports `draft` as Gitea answers it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ForgeError, type Forge, type ForgePullRequest, type ForgeRepo, type ForgeToken, type OpenDraftInput } from './forge';
import { boundedFetch, DEFAULT_FORGE_LIMITS, parseForgeJson, statusError, type ForgeHttpLimits } from './forge-http';
import { assertRepoNames, baseHref, branchNameOk, forgeBaseUrl, repoFromUrl, tokenBasicAuth } from './repo-url';

export interface GiteaForgeOptions {
  /** Gitea's root URL (`ROOT_URL`), e.g. `https://git.example.com`. */
  baseUrl: string;
  /** A site administrator: creates the service users, grants them, mints their tokens, opens pull requests. */
  admin: { username: string; password: string };
  /** Prefix of the service users' names (default `agent`). */
  serviceUserPrefix?: string;
  /** The work-in-progress title prefix Gitea is configured with (default `WIP:`). */
  draftPrefix?: string;
  /** Lifetime given to a minted token (default 1 h). */
  tokenTtlMs?: number;
  limits?: ForgeHttpLimits;
  now?: () => number;
}

const pullSchema = z.object({
  number: z.number().int().positive(),
  html_url: z.string().url().max(2048),
  draft: z.boolean(),
  state: z.enum(['open', 'closed']),
  head: z.object({ ref: z.string().max(255), repo_id: z.number().int().optional() }),
  base: z.object({ ref: z.string().max(255), repo_id: z.number().int().optional() }),
});
const repoSchema = z.object({ id: z.number().int(), default_branch: z.string().min(1).max(255) });
const tokenSchema = z.object({ sha1: z.string().regex(/^[0-9a-f]{20,128}$/) });
const tokenListSchema = z.array(z.object({ id: z.number().int(), name: z.string().max(255) })).max(1000);

type Access = 'read' | 'write';
const TOKEN_NAME = /^agent-(\d{10})-[0-9a-f]{8}$/;

/** A `Forge` over one Gitea instance. */
export class GiteaForge implements Forge {
  readonly kind = 'gitea' as const;
  private readonly base: URL;
  private readonly fetch: typeof fetch;
  private readonly authorization: string;
  private readonly now: () => number;

  constructor(private readonly options: GiteaForgeOptions) {
    this.base = forgeBaseUrl(options.baseUrl, 'the Gitea base URL');
    this.fetch = boundedFetch('Gitea', options.limits ?? DEFAULT_FORGE_LIMITS);
    this.authorization = `Basic ${Buffer.from(`${options.admin.username}:${options.admin.password}`).toString('base64')}`;
    this.now = options.now ?? Date.now;
  }

  repoOf(repo: string): ForgeRepo | undefined {
    return repoFromUrl(repo, this.base);
  }

  gitUrl(repo: ForgeRepo): string {
    assertRepoNames(repo);
    return `${baseHref(this.base)}/${repo.owner}/${repo.name}.git`;
  }

  gitAuthHeader(token: ForgeToken): string {
    return tokenBasicAuth(token.token);
  }

  cloneToken(repo: ForgeRepo): Promise<ForgeToken> {
    return this.mint(repo, 'read');
  }

  repoToken(repo: ForgeRepo): Promise<ForgeToken> {
    return this.mint(repo, 'write');
  }

  async defaultBranch(repo: ForgeRepo): Promise<string> {
    return (await this.call('GET', this.repoPath(repo), undefined, repoSchema)).default_branch;
  }

  async findPullRequest(repo: ForgeRepo, head: string): Promise<ForgePullRequest | undefined> {
    if (!branchNameOk(head)) throw new ForgeError('refused', `Not a branch name: ${JSON.stringify(head).slice(0, 220)}`);
    const { id } = await this.call('GET', this.repoPath(repo), undefined, repoSchema);
    for (let page = 1; page <= 20; page += 1) {
      const pulls = await this.call('GET', `${this.repoPath(repo)}/pulls?state=open&limit=50&page=${page}`, undefined, z.array(pullSchema).max(50));
      const found = pulls.find((p) => p.head.ref === head && (p.head.repo_id === undefined || p.head.repo_id === id));
      if (found) return toPullRequest(found);
      if (pulls.length < 50) return undefined;
    }
    throw new ForgeError('bad_answer', 'Gitea: more than 1000 open pull requests to search');
  }

  async openDraftPullRequest(repo: ForgeRepo, input: OpenDraftInput): Promise<ForgePullRequest> {
    for (const branch of [input.head, input.base]) {
      if (!branchNameOk(branch)) throw new ForgeError('refused', `Not a branch name: ${JSON.stringify(branch).slice(0, 220)}`);
    }
    const prefix = this.options.draftPrefix ?? 'WIP:';
    const title = input.title.startsWith(prefix) ? input.title : `${prefix} ${input.title}`;
    try {
      const made = await this.call('POST', `${this.repoPath(repo)}/pulls`, { head: input.head, base: input.base, title, body: input.body }, pullSchema);
      return toPullRequest(made);
    } catch (err) {
      // Gitea answers 409 when an open pull request of these branches exists: that one is the answer.
      if (!(err instanceof ForgeError) || err.status !== 409) throw err;
      const existing = await this.findPullRequest(repo, input.head);
      if (!existing) throw err;
      return existing;
    }
  }

  /** Ensures the repository's service user for `access` and mints a token of it; prunes its ended tokens. */
  private async mint(repo: ForgeRepo, access: Access): Promise<ForgeToken> {
    const user = this.serviceUser(repo, access);
    await this.ensureServiceUser(user);
    await this.call('PUT', `${this.repoPath(repo)}/collaborators/${user}`, { permission: access });
    await this.pruneEnded(user);
    const expiresAt = new Date(this.now() + (this.options.tokenTtlMs ?? 3600_000));
    const name = `agent-${String(Math.ceil(expiresAt.getTime() / 1000)).padStart(10, '0')}-${randomBytes(4).toString('hex')}`;
    const made = await this.call('POST', `/users/${user}/tokens`, { name, scopes: [access === 'read' ? 'read:repository' : 'write:repository'] }, tokenSchema);
    return { token: made.sha1, expiresAt };
  }

  /** Deletes the service user's tokens whose end has passed (a concurrent mint may have deleted one first). */
  private async pruneEnded(user: string): Promise<void> {
    const nowSec = Math.floor(this.now() / 1000);
    const ended: number[] = [];
    for (let page = 1; page <= 20; page += 1) {
      const tokens = await this.call('GET', `/users/${user}/tokens?limit=50&page=${page}`, undefined, tokenListSchema);
      for (const token of tokens) if (Number(TOKEN_NAME.exec(token.name)?.[1] ?? 0) <= nowSec) ended.push(token.id);
      if (tokens.length < 50) break;
    }
    for (const id of ended) {
      await this.call('DELETE', `/users/${user}/tokens/${id}`).catch((err: unknown) => {
        if (!(err instanceof ForgeError && err.failure === 'not_found')) throw err;
      });
    }
  }

  /** `<prefix>-r-<hash>` / `<prefix>-w-<hash>`: one reader and one writer per repository (lower-cased name). */
  private serviceUser(repo: ForgeRepo, access: Access): string {
    assertRepoNames(repo);
    const hash = createHash('sha256').update(`${repo.owner}/${repo.name}`.toLowerCase()).digest('hex').slice(0, 16);
    return `${this.options.serviceUserPrefix ?? 'agent'}-${access === 'read' ? 'r' : 'w'}-${hash}`;
  }

  private async ensureServiceUser(username: string): Promise<void> {
    const exists = await this.call('GET', `/users/${username}`).then(() => true, (err: unknown) => {
      if (err instanceof ForgeError && err.failure === 'not_found') return false;
      throw err;
    });
    if (exists) return;
    await this.call('POST', '/admin/users', {
      username, email: `${username}@agent.invalid`, password: randomBytes(24).toString('base64url'),
      must_change_password: false, restricted: true, visibility: 'private',
    }).catch((err: unknown) => {
      // Another mint created it meanwhile.
      if (!(err instanceof ForgeError && err.status === 422)) throw err;
    });
    await this.call('PATCH', `/admin/users/${username}`, { source_id: 0, login_name: username, max_repo_creation: 0 });
  }

  private repoPath(repo: ForgeRepo): string {
    assertRepoNames(repo);
    return `/repos/${repo.owner}/${repo.name}`;
  }

  private async call(method: string, path: string, body?: unknown): Promise<void>;
  private async call<S extends z.ZodType>(method: string, path: string, body: unknown, schema: S): Promise<z.output<S>>;
  private async call(method: string, path: string, body?: unknown, schema?: z.ZodType): Promise<unknown> {
    const what = `Gitea ${method} ${path.split('?')[0]}`;
    const response = await this.fetch(`${baseHref(this.base)}/api/v1${path}`, {
      method,
      headers: { authorization: this.authorization, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (response.status < 200 || response.status > 299) throw statusError(what, response.status, bytes);
    return schema ? parseForgeJson(bytes, schema, what) : undefined;
  }
}

function toPullRequest(pull: z.output<typeof pullSchema>): ForgePullRequest {
  return { number: pull.number, url: pull.html_url, head: pull.head.ref, base: pull.base.ref, draft: pull.draft, state: pull.state };
}
