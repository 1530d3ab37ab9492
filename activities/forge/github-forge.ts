/**
 * The source-control app's adapter of the forge seam (docs/forges.md "GitHub"), through
 * `@octokit/rest` over bounded HTTP (forge-http.ts). It uses exactly the documented subset the
 * wire contract in docs/forges.md lists: an app JWT (RS256, `iat` 60 s back, `exp` 9 minutes on,
 * `iss` the app id) finds the repository's installation and mints installation tokens limited to
 * that one repository and to the named permissions (`contents: read` for a clone token;
 * `contents: write` + `pull_requests: write` for a repo token; `contents: read` +
 * `pull_requests: write` for the adapter's own repository calls, cached until 5 minutes before
 * they end). Drafts are real: `draft: true`, and `draft` is reported as GitHub answers it.
 */
import { sign, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import type { Octokit } from '@octokit/rest' with { 'resolution-mode': 'import' };
import { ForgeError, type Forge, type ForgePullRequest, type ForgeRepo, type ForgeToken, type OpenDraftInput } from './forge';
import { boundedFetch, checkForgeValue, DEFAULT_FORGE_LIMITS, failureOfStatus, safeExcerpt, type ForgeHttpLimits } from './forge-http';
import { assertRepoNames, baseHref, branchNameOk, forgeBaseUrl, repoFromUrl, tokenBasicAuth } from './repo-url';

/** The loaded app (agent/jobs/source-control-app.ts); throwing means it is not available now. */
export type AppCredentials = () => { appId: string; key: KeyObject };

export interface GitHubForgeOptions {
  /** REST API base (default `https://api.github.com`; a loopback URL in tests). */
  apiUrl?: string;
  /** Where repositories live for people and git (default `https://github.com`). */
  webUrl?: string;
  app: AppCredentials;
  limits?: ForgeHttpLimits;
  now?: () => number;
}

type Permissions = Record<string, 'read' | 'write'>;
const CLONE: Permissions = { contents: 'read' };
const REPO: Permissions = { contents: 'write', pull_requests: 'write' };
const OWN: Permissions = { contents: 'read', pull_requests: 'write' };
const REUSE_MARGIN_MS = 5 * 60_000;
/** Octokit's own request log is off: failures come back as `ForgeError`s, and the callers log them. */
const SILENT = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const installationSchema = z.object({ id: z.number().int().positive() });
const tokenSchema = z.object({ token: z.string().regex(/^[A-Za-z0-9_.-]{16,255}$/), expires_at: z.string().datetime({ offset: true }) });
const repoSchema = z.object({ default_branch: z.string().min(1).max(255) });
const pullSchema = z.object({
  number: z.number().int().positive(),
  html_url: z.string().url().max(2048),
  state: z.enum(['open', 'closed']),
  draft: z.boolean(),
  head: z.object({ ref: z.string().max(255) }),
  base: z.object({ ref: z.string().max(255) }),
});

/** A `Forge` over GitHub's REST API with the deployment's app. */
export class GitHubForge implements Forge {
  readonly kind = 'github' as const;
  private readonly api: URL;
  private readonly web: URL;
  private readonly now: () => number;
  private readonly own = new Map<string, ForgeToken>();

  constructor(private readonly options: GitHubForgeOptions) {
    this.api = forgeBaseUrl(options.apiUrl ?? 'https://api.github.com', 'the GitHub API URL');
    this.web = forgeBaseUrl(options.webUrl ?? 'https://github.com', 'the GitHub web URL');
    this.now = options.now ?? Date.now;
  }

  repoOf(repo: string): ForgeRepo | undefined {
    return repoFromUrl(repo, this.web);
  }

  gitUrl(repo: ForgeRepo): string {
    assertRepoNames(repo);
    return `${baseHref(this.web)}/${repo.owner}/${repo.name}.git`;
  }

  gitAuthHeader(token: ForgeToken): string {
    return tokenBasicAuth(token.token);
  }

  cloneToken(repo: ForgeRepo): Promise<ForgeToken> {
    return this.installationToken(repo, CLONE);
  }

  repoToken(repo: ForgeRepo): Promise<ForgeToken> {
    return this.installationToken(repo, REPO);
  }

  async defaultBranch(repo: ForgeRepo): Promise<string> {
    const data = await this.call(await this.ownToken(repo), 'GET /repos/{owner}/{repo}', { owner: repo.owner, repo: repo.name }, repoSchema);
    return data.default_branch;
  }

  async findPullRequest(repo: ForgeRepo, head: string): Promise<ForgePullRequest | undefined> {
    if (!branchNameOk(head)) throw new ForgeError('refused', `Not a branch name: ${JSON.stringify(head).slice(0, 220)}`);
    const pulls = await this.call(await this.ownToken(repo), 'GET /repos/{owner}/{repo}/pulls',
      { owner: repo.owner, repo: repo.name, head: `${repo.owner}:${head}`, state: 'open', per_page: 10 }, z.array(pullSchema).max(100));
    const found = pulls.find((p) => p.head.ref === head);
    return found ? toPullRequest(found) : undefined;
  }

  async openDraftPullRequest(repo: ForgeRepo, input: OpenDraftInput): Promise<ForgePullRequest> {
    for (const branch of [input.head, input.base]) {
      if (!branchNameOk(branch)) throw new ForgeError('refused', `Not a branch name: ${JSON.stringify(branch).slice(0, 220)}`);
    }
    try {
      const made = await this.call(await this.ownToken(repo), 'POST /repos/{owner}/{repo}/pulls', {
        owner: repo.owner, repo: repo.name, head: input.head, base: input.base, title: input.title, body: input.body, draft: true,
      }, pullSchema);
      return toPullRequest(made);
    } catch (err) {
      // 422 when an open pull request of this head exists: that one is the answer.
      if (!(err instanceof ForgeError) || err.status !== 422) throw err;
      const existing = await this.findPullRequest(repo, input.head);
      if (!existing) throw err;
      return existing;
    }
  }

  /** The app's JWT (RS256): `iat` 60 s back (clock drift), `exp` 9 minutes on (GitHub's limit is 10). */
  appJwt(): string {
    const { appId, key } = this.appCredentials();
    const nowSec = Math.floor(this.now() / 1000);
    const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iat: nowSec - 60, exp: nowSec + 540, iss: appId })}`;
    return `${unsigned}.${sign('sha256', Buffer.from(unsigned), key).toString('base64url')}`;
  }

  private appCredentials(): { appId: string; key: KeyObject } {
    try {
      return this.options.app();
    } catch (err) {
      throw new ForgeError('unavailable', `The source-control app is not available: ${safeExcerpt((err as Error).message)}`);
    }
  }

  private async installationToken(repo: ForgeRepo, permissions: Permissions): Promise<ForgeToken> {
    assertRepoNames(repo);
    const jwt = this.appJwt();
    const installation = await this.call(jwt, 'GET /repos/{owner}/{repo}/installation', { owner: repo.owner, repo: repo.name }, installationSchema);
    const made = await this.call(jwt, 'POST /app/installations/{installation_id}/access_tokens',
      { installation_id: installation.id, repositories: [repo.name], permissions }, tokenSchema);
    return { token: made.token, expiresAt: new Date(made.expires_at) };
  }

  /** The adapter's own token for a repository's API calls, reused until 5 minutes before it ends. */
  private async ownToken(repo: ForgeRepo): Promise<string> {
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    const cached = this.own.get(key);
    if (cached && cached.expiresAt.getTime() - REUSE_MARGIN_MS > this.now()) return cached.token;
    const fresh = await this.installationToken(repo, OWN);
    this.own.set(key, fresh);
    return fresh.token;
  }

  /** One REST call through a fresh Octokit (its fetch bounded); every failure becomes a `ForgeError`. */
  private async call<S extends z.ZodType>(auth: string, route: string, params: Record<string, unknown>, schema: S): Promise<z.output<S>> {
    const what = `GitHub ${route}`;
    const bounded = boundedFetch('GitHub', this.options.limits ?? DEFAULT_FORGE_LIMITS);
    let thrown: unknown;
    const capturing: typeof fetch = async (input, init) => {
      try {
        return await bounded(input, init);
      } catch (err) {
        thrown = err;
        throw err;
      }
    };
    const { Octokit: OctokitClass } = await import('@octokit/rest');
    const octokit: Octokit = new OctokitClass({ auth, baseUrl: baseHref(this.api), userAgent: 'agent-control-plane', request: { fetch: capturing, retries: 0 }, log: SILENT });
    let data: unknown;
    try {
      data = (await octokit.request(route, params)).data;
    } catch (err) {
      if (thrown instanceof ForgeError) throw thrown;
      const status = (err as { status?: number }).status ?? 0;
      const said = (err as { response?: { data?: { message?: unknown } } }).response?.data?.message;
      if (status === 0 || !(err as { response?: unknown }).response) throw new ForgeError('unavailable', `${what}: the forge did not answer`);
      throw new ForgeError(failureOfStatus(status), `${what}: the forge answered ${status}${typeof said === 'string' ? `: ${safeExcerpt(said)}` : ''}`, status);
    }
    return checkForgeValue(data, schema, what);
  }
}

function toPullRequest(pull: z.output<typeof pullSchema>): ForgePullRequest {
  return { number: pull.number, url: pull.html_url, head: pull.head.ref, base: pull.base.ref, draft: pull.draft, state: pull.state };
}
