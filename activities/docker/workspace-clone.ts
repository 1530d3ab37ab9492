/**
 * Clones a job's repository for its sandbox on the host side (sandboxes have no network), then
 * copies the checkout into `/workspace` and gives it to the member. The read-only clone credential
 * goes to git through the environment of each fetch (`GIT_CONFIG_*` → `http.extraHeader`), so it
 * is never on a command line, in the checkout's `.git/config` or in any file, and it is scrubbed
 * from error messages. Accepted repository strings: `https://…` and `file://…` URLs, and `http://…`
 * to a loopback host only (a forge on this machine, as in the tests: docs/forges.md).
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { lstat, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { execInContainer, extractTarInContainer } from './container-exec';
import { tokenBasicAuth, transportAllowed } from '../forge/repo-url';

const execFileAsync = promisify(execFile);

export interface CloneInput {
  uid: number;
  repo: string;
  baseRef?: string;
  baseSha?: string;
  cloneCredential?: string;
  /** Largest checkout (working tree and `.git`) copied into the sandbox, bytes (host setting `repository_max_mib`). */
  maxBytes?: number;
}

/** The repository string is not a supported URL (a permanent error). */
export class UnsupportedRepoError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedRepo';
  }
}

/** The requested base ref or sha does not exist in the repository (a permanent error). */
export class BaseRevisionNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BaseRevisionNotFound';
  }
}

/** The checkout is larger than the repository size limit (a permanent error; the message is the owner's). */
export class RepositoryTooLargeError extends Error {
  constructor(bytes: number, maxBytes: number) {
    const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
    super(`The repository is ${mib(bytes)} checked out, more than the limit of ${mib(maxBytes)} for new sandboxes; ask an operator to raise the repository size limit`);
    this.name = 'RepositoryTooLarge';
  }
}

const REF = /^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,255}$/;
const SHA = /^[0-9a-f]{7,64}$/;

/** Checks the repository string and the base; returns the URL git fetches from. */
export function validateCloneInput(input: Pick<CloneInput, 'repo' | 'baseRef' | 'baseSha'>): string {
  let url: URL;
  try {
    url = new URL(input.repo);
  } catch {
    throw new UnsupportedRepoError(`Unsupported repository ${JSON.stringify(input.repo)}: give an https:// or file:// URL`);
  }
  if (url.protocol !== 'file:' && !transportAllowed(url)) {
    throw new UnsupportedRepoError(`Unsupported repository scheme "${url.protocol.replace(/:$/, '')}": give an https:// or file:// URL`);
  }
  if (url.username || url.password) throw new UnsupportedRepoError('Repository URLs must not carry credentials');
  if (input.baseRef !== undefined && !REF.test(input.baseRef)) throw new UnsupportedRepoError(`Invalid base ref ${JSON.stringify(input.baseRef)}`);
  if (input.baseSha !== undefined && !SHA.test(input.baseSha)) throw new UnsupportedRepoError(`Invalid base sha ${JSON.stringify(input.baseSha)}`);
  return url.toString();
}

/** Clones on the host, copies into `/workspace`, chowns to the member; returns the checked-out SHA. */
export async function cloneIntoWorkspace(docker: Docker, containerName: string, input: CloneInput): Promise<string> {
  const url = validateCloneInput(input);
  const dir = await mkdtemp(join(tmpdir(), 'agent-clone-'));
  try {
    const sha = await cloneOnHost(dir, url, input);
    if (input.maxBytes !== undefined) {
      // Measured on the host before anything reaches the sandbox (the host's temporary directory holds it briefly).
      const bytes = await directoryBytes(dir);
      if (bytes > input.maxBytes) throw new RepositoryTooLargeError(bytes, input.maxBytes);
    }
    await copyIntoContainer(docker, containerName, dir);
    const owned = await execInContainer(docker, containerName, { cmd: ['chown', '-R', `${input.uid}:${input.uid}`, '/workspace'], user: '0' });
    if (owned.exitCode !== 0) throw new Error(`Cannot give /workspace to the member: ${owned.stderr.trim()}`);
    return sha;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function cloneOnHost(dir: string, url: string, input: CloneInput): Promise<string> {
  const git = gitRunner(dir, input.cloneCredential);
  await git(['init', '-q', '-b', 'main', '.']);
  // Shared by the group's members (forks): what any member's git writes stays group-writable (docs/sandboxes.md "Forks").
  await git(['config', 'core.sharedRepository', 'group']);
  await git(['remote', 'add', 'origin', url]);
  await git(['fetch', '-q', '--tags', 'origin', '+refs/heads/*:refs/remotes/origin/*'], { credential: true });
  const target = input.baseSha ?? (input.baseRef ? `refs/remotes/origin/${input.baseRef}` : await remoteDefault(git));
  const resolve = () => git(['rev-parse', '--verify', '--quiet', `${target}^{commit}`]);
  let sha = await resolve().catch(() => undefined);
  if (!sha && input.baseSha) {
    // A commit no branch or tag reaches (e.g. a pull request head): ask for it by name.
    await git(['fetch', '-q', 'origin', input.baseSha], { credential: true }).catch(() => undefined);
    sha = await resolve().catch(() => undefined);
  }
  if (!sha) throw new BaseRevisionNotFoundError(`The repository has no ${input.baseSha ? `commit ${input.baseSha}` : `branch ${input.baseRef ?? '(default)'}`}`);
  await git(['checkout', '-q', '-B', input.baseRef ?? 'main', sha]);
  return sha;
}

/** The remote's default branch (its HEAD), falling back to `main`. */
async function remoteDefault(git: GitRunner): Promise<string> {
  const head = await git(['ls-remote', '--symref', 'origin', 'HEAD'], { credential: true }).catch(() => '');
  const branch = /^ref: refs\/heads\/(\S+)\s+HEAD/m.exec(head)?.[1] ?? 'main';
  return `refs/remotes/origin/${branch}`;
}

type GitRunner = (args: string[], options?: { credential?: boolean }) => Promise<string>;

/** Runs git in `dir`; the credential, when asked for, only in that command's environment. */
function gitRunner(dir: string, credential: string | undefined): GitRunner {
  // The header every forge adapter's `gitAuthHeader` gives (docs/forges.md): the token as the basic password.
  const header = credential ? `Authorization: ${tokenBasicAuth(credential)}` : undefined;
  const scrub = (text: string): string => {
    let out = text;
    for (const secret of [credential, header, header?.slice('Authorization: Basic '.length)]) {
      if (secret) out = out.split(secret).join('***');
    }
    return out;
  };
  return async (args, options = {}) => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: 'true',
    };
    if (options.credential && header) Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: header });
    try {
      const { stdout } = await execFileAsync('git', args, { cwd: dir, env, maxBuffer: 16 * 1024 * 1024 });
      return stdout.trim();
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      // eslint-disable-next-line preserve-caught-error -- the cause's message could hold the credential; only the scrubbed text is kept
      throw new Error(`git ${args[0]} failed: ${scrub((e.stderr ?? e.message).trim())}`);
    }
  };
}

/** Bytes of every file under `dir` (apparent sizes; a symbolic link counts as itself, never followed). */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory()) continue;
    total += (await lstat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/**
 * Streams the checkout (with its `.git`) into `/workspace` as a tar archive. The tar's output is
 * piped into a stream of ours at once: Node discards a child's unread stdout when the child exits
 * (a small checkout is all written before the container's exec is ready), which left an empty or
 * headless archive ("This does not look like a tar archive") on some runs.
 */
async function copyIntoContainer(docker: Docker, containerName: string, dir: string): Promise<void> {
  // The archive is made first: the extraction inside is told its exact length.
  const file = `${dir}.tar`;
  try {
    await execFileAsync('tar', ['-C', dir, '-cf', file, '.']).catch((err: unknown) => {
      throw new Error(`tar of the checkout failed: ${String((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`, { cause: err });
    });
    const { size } = await stat(file);
    await extractTarInContainer(docker, containerName, createReadStream(file, { highWaterMark: 1024 * 1024 }), { dir: '/workspace', length: size });
  } finally {
    await rm(file, { force: true });
  }
}
