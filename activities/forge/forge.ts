/**
 * The forge seam (DESIGN.md "Layout": `activities/forge/`): where a job's repository lives, how
 * the trusted side gets credentials for it, and where its draft pull requests are opened. One
 * interface, two adapters: the deployment's source-control app (GitHub's REST API) and Gitea.
 * Nothing here runs inside a sandbox; tokens it returns never reach a log or a response.
 */

/** A repository on a forge, named as the forge names it. */
export interface ForgeRepo {
  owner: string;
  name: string;
}

/** A credential for git over HTTPS on one repository, and when it stops working. */
export interface ForgeToken {
  /** The secret (a bearer or basic credential; see `gitAuthHeader`). */
  token: string;
  expiresAt: Date;
}

/** A pull request as the publisher needs it. */
export interface ForgePullRequest {
  number: number;
  /** The page a person opens. */
  url: string;
  head: string;
  base: string;
  draft: boolean;
  state: 'open' | 'closed';
}

export interface OpenDraftInput {
  head: string;
  base: string;
  title: string;
  body: string;
}

export interface Forge {
  readonly kind: 'github' | 'gitea';
  /** The repository a job's `repo` string names on this forge, or undefined when this forge does not serve it. */
  repoOf(repo: string): ForgeRepo | undefined;
  /** The HTTPS URL git fetches and pushes, with no credential in it. */
  gitUrl(repo: ForgeRepo): string;
  /** The `Authorization` header value git sends with a token of this forge (`http.extraHeader`). */
  gitAuthHeader(token: ForgeToken): string;
  /** A read-only credential for cloning this one repository. */
  cloneToken(repo: ForgeRepo): Promise<ForgeToken>;
  /** A short-lived credential with contents and pull-request write on this one repository. */
  repoToken(repo: ForgeRepo): Promise<ForgeToken>;
  /** The branch pull requests target when the job named none. */
  defaultBranch(repo: ForgeRepo): Promise<string>;
  /** The open pull request whose head is `head` (a branch of the same repository), if any. */
  findPullRequest(repo: ForgeRepo, head: string): Promise<ForgePullRequest | undefined>;
  /** Opens a draft pull request from `head` into `base`. */
  openDraftPullRequest(repo: ForgeRepo, input: OpenDraftInput): Promise<ForgePullRequest>;
}

/**
 * Why a forge call failed, for the caller's decision: `refused` (the forge said no: 401/403/422),
 * `not_found` (no such repository, installation or branch), `unavailable` (network, timeout, 5xx,
 * 429; worth a retry), `bad_answer` (an oversized, malformed or unexpected answer). The message
 * never holds a credential and never more than a bounded excerpt of what the forge said.
 */
export type ForgeFailure = 'refused' | 'not_found' | 'unavailable' | 'bad_answer';

/** A failed forge call (see {@link ForgeFailure}); `status` is the forge's HTTP status when it answered. */
export class ForgeError extends Error {
  constructor(readonly failure: ForgeFailure, message: string, readonly status?: number) {
    super(message);
    this.name = 'ForgeError';
  }
}
