/**
 * The publisher's git work, on the trusted side (docs/publisher.md "Publish"): in a scratch bare
 * repository, fetch the chat's branch (or, before it exists, the job's base commit), check the
 * **patch gate** (the branch's tree is the patch's start tree; the patch applied to it in a
 * temporary index gives exactly its end tree), commit the end tree with a trailer naming the turn,
 * and push without force. A commit already carrying the turn's trailer on the branch is found and
 * returned instead (a retried activity never commits twice), and so is a branch whose tree already
 * is the turn's end tree (the agent pushed its work itself with `SCM_TOKEN`). The repo token reaches git only as an
 * `http.extraHeader` in the environment of the commands that talk to the forge: never on a command
 * line, in a config file or in an error message.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The trailer that names the turn a commit publishes. */
export const TURN_TRAILER = 'Agent-Turn';
/** Commits of the branch searched for the turn's trailer. */
const TRAILER_SEARCH_DEPTH = 100;
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Why the gate refused a patch (a permanent failure; the message is the owner's). */
export class PatchGateError extends Error {
  constructor(readonly reason: 'start_tree_mismatch' | 'does_not_apply' | 'end_tree_mismatch', message: string) {
    super(message);
    this.name = 'PatchGateRefused';
  }
}

/** The forge refused the push or the fetch (retryable: the branch moved, or the forge is down). */
export class PublishGitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublishGitFailed';
  }
}

export interface PublishCommitInput {
  /** The repository's git URL, with no credential in it. */
  url: string;
  /** The `Authorization` header value for the forge (`Forge.gitAuthHeader`); none for a local repository. */
  authHeader?: string;
  branch: string;
  /** The commit the branch starts from when it does not exist yet (the job's base). */
  baseSha: string;
  turnId: string;
  startTree: string;
  endTree: string;
  patch: Buffer;
  /** The commit message's subject and body; the turn's trailer is appended. */
  message: string;
  author: { name: string; email: string };
}

export interface PublishedCommit {
  commitSha: string;
  /** False when a commit of this turn was already on the branch (a retried publish). */
  created: boolean;
}

type Git = (args: string[], options?: { remote?: boolean; stdin?: Buffer; env?: Record<string, string> }) => Promise<string>;

/** git in `dir` with a clean configuration; the auth header only for commands that reach the forge. */
function gitIn(dir: string, authHeader: string | undefined): Git {
  const scrub = (text: string): string => (authHeader ? text.split(authHeader).join('***').split(authHeader.replace(/^\S+\s+/, '')).join('***') : text);
  return (args, options = {}) => new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, GIT_DIR: dir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', LC_ALL: 'C', ...options.env,
    };
    if (options.remote && authHeader) Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: ${authHeader}` });
    const child = spawn('git', args, { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (e) => reject(new PublishGitError(`git ${args[0]} could not start: ${scrub(e.message)}`)));
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8').trim());
      else reject(new PublishGitError(`git ${args[0]} failed: ${scrub(Buffer.concat(err).toString('utf8').trim()).slice(0, 500)}`));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? Buffer.alloc(0));
  });
}

/** The tip of `branch` on the remote, or undefined when it does not exist. */
async function remoteTip(git: Git, url: string, branch: string): Promise<string | undefined> {
  const listed = await git(['ls-remote', '--heads', url, `refs/heads/${branch}`], { remote: true });
  const sha = listed.split('\n').map((line) => line.split('\t')).find(([, ref]) => ref === `refs/heads/${branch}`)?.[0];
  return sha && OBJECT_ID.test(sha) ? sha : undefined;
}

/** Fetches `what` (a branch, or the base commit by id; a forge that refuses ids in wants is fetched whole). */
async function fetchStart(git: Git, url: string, what: string): Promise<void> {
  try {
    await git(['fetch', '-q', '--no-tags', url, what], { remote: true });
  } catch (err) {
    if (what.startsWith('refs/')) throw err;
    await git(['fetch', '-q', '--tags', url, '+refs/heads/*:refs/remotes/origin/*'], { remote: true });
    await git(['cat-file', '-e', `${what}^{commit}`]).catch(() => {
      throw new PublishGitError(`The repository has no commit ${what.slice(0, 12)} (the job's base)`);
    });
  }
}

/** The commit among the branch's latest that names `turnId` in its trailer. */
async function commitOfTurn(git: Git, tip: string, turnId: string): Promise<string | undefined> {
  const log = await git(['log', `-${TRAILER_SEARCH_DEPTH}`, '--format=%H%x00%(trailers:key=' + TURN_TRAILER + ',valueonly)%x01', tip]);
  for (const entry of log.split('\x01')) {
    const [sha, trailers] = entry.trim().split('\x00');
    if (sha && trailers?.split('\n').some((value) => value.trim() === turnId)) return sha;
  }
  return undefined;
}

/** The tree the patch makes of `startTree`, through a temporary index. */
async function applyToTree(git: Git, dir: string, startTree: string, patch: Buffer): Promise<string> {
  const env = { GIT_INDEX_FILE: join(dir, 'publish-index') };
  await git(['read-tree', startTree], { env });
  try {
    await git(['apply', '--cached', '--binary', '--whitespace=nowarn', '-'], { env, stdin: patch });
  } catch (err) {
    throw new PatchGateError('does_not_apply', `The turn's diff does not apply to the branch: ${(err as Error).message.replace(/^git apply failed: /, '')}`);
  }
  return git(['write-tree'], { env });
}

/**
 * Publishes one turn's patch as a commit on `branch` (see the module comment); throws
 * {@link PatchGateError} when the gate refuses and {@link PublishGitError} when the forge does.
 */
export async function publishCommit(input: PublishCommitInput): Promise<PublishedCommit> {
  for (const [name, value] of [['start tree', input.startTree], ['end tree', input.endTree], ['base', input.baseSha]] as const) {
    if (!OBJECT_ID.test(value)) throw new PatchGateError('start_tree_mismatch', `The ${name} is not an object id`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'agent-publish-'));
  try {
    const git = gitIn(dir, input.authHeader);
    await execFileAsync('git', ['init', '-q', '--bare', dir], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: dir } });
    const tip = await remoteTip(git, input.url, input.branch);
    const parent = tip ?? input.baseSha;
    await fetchStart(git, input.url, tip ? `refs/heads/${input.branch}` : input.baseSha);
    if (tip) {
      const existing = await commitOfTurn(git, tip, input.turnId);
      if (existing) return { commitSha: existing, created: false };
    }
    const branchTree = await git(['rev-parse', `${parent}^{tree}`]);
    // The branch already holds the turn's result (the agent pushed it itself with SCM_TOKEN): nothing to add.
    if (tip && branchTree === input.endTree) return { commitSha: tip, created: false };
    if (branchTree !== input.startTree) {
      throw new PatchGateError('start_tree_mismatch', `The branch ${input.branch} is not where the turn started (its tree is ${branchTree.slice(0, 12)}, the turn started from ${input.startTree.slice(0, 12)})`);
    }
    const endTree = await applyToTree(git, dir, input.startTree, input.patch);
    if (endTree !== input.endTree) {
      throw new PatchGateError('end_tree_mismatch', `The turn's diff does not give the workspace the turn ended with (${endTree.slice(0, 12)} instead of ${input.endTree.slice(0, 12)})`);
    }
    const { name, email } = input.author;
    const identity = { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email };
    const message = `${input.message.trim()}\n\n${TURN_TRAILER}: ${input.turnId}\n`;
    const commitSha = await git(['commit-tree', endTree, '-p', parent, '-F', '-'], { env: identity, stdin: Buffer.from(message) });
    await git(['push', '-q', input.url, `${commitSha}:refs/heads/${input.branch}`], { remote: true });
    return { commitSha, created: true };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
