/**
 * Initializes a sandbox's `/workspace` once and records its base (docs/sandboxes.md "Workspace
 * initialization"). A temporary workspace (`repo: null`) becomes a new repository on `main` with
 * one empty commit whose author, committer, dates and message are fixed, so its SHA is the same on
 * every host. A repository is cloned on the host side (the sandbox has no network; see
 * workspace-clone.ts) and copied in. The recorded base lives in a root-owned file the member cannot
 * forge; a workspace without a record is an interrupted initialization and is emptied before
 * starting again.
 */
import type Docker from 'dockerode';
import { execInContainer } from './container-exec';
import { WORKSPACE_DIR } from './docker-sandbox';
import { memberPaths } from './sandbox-container';
import { cloneIntoWorkspace, validateCloneInput } from './workspace-clone';

export type WorkspaceInput =
  | { uid: number; repo: null }
  | {
    uid: number; repo: string; baseRef?: string; baseSha?: string; cloneCredential?: string; maxBytes?: number;
    /** Looks the clone credential up only when a clone happens (an initialized workspace needs none, so a forge that is down does not matter then). */
    lookUpCredential?: () => Promise<string | undefined>;
  };

export interface WorkspaceBase {
  baseSha: string;
}

/** Where the recorded base lives inside the container (root-owned). */
export const WORKSPACE_RECORD = '/etc/agent/workspace-base.json';

/** The fixed identity, dates and message of a temporary workspace's only commit. */
export const TEMPORARY_WORKSPACE_COMMIT = {
  name: 'Agent Workspace',
  email: 'workspace@agent.invalid',
  date: '2000-01-01T00:00:00+0000',
  message: 'Temporary workspace',
} as const;

/** SHA of that commit (git SHA-1 object format): the same on every host, checked by the tests. */
export const TEMPORARY_WORKSPACE_SHA = '0ac516439b515dd9be6dc19787686863c76d142f';

// A repository shared by the group's members (forks) and written like their commands, with umask 002 (docs/sandboxes.md "Forks").
const INIT_TEMPORARY = [
  'set -e',
  'umask 002',
  `git init -q --shared=group -b main ${WORKSPACE_DIR}`,
  `cd ${WORKSPACE_DIR}`,
  `git -c commit.gpgsign=false commit -q --allow-empty -m '${TEMPORARY_WORKSPACE_COMMIT.message}'`,
  'git rev-parse HEAD',
].join('\n');

async function rootSh(docker: Docker, containerName: string, script: string, args: string[] = []): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return execInContainer(docker, containerName, { cmd: ['sh', '-c', script, 'sh', ...args], user: '0' });
}

async function readRecord(docker: Docker, containerName: string): Promise<WorkspaceBase | undefined> {
  const read = await rootSh(docker, containerName, `cat ${WORKSPACE_RECORD} 2>/dev/null`);
  if (read.exitCode !== 0 || read.stdout.trim() === '') return undefined;
  return { baseSha: (JSON.parse(read.stdout) as WorkspaceBase).baseSha };
}

/** Builds `/workspace` (idempotent: an initialized workspace returns its recorded base). */
export async function initWorkspace(docker: Docker, containerName: string, input: WorkspaceInput): Promise<WorkspaceBase> {
  if (input.repo !== null) validateCloneInput(input);
  const recorded = await readRecord(docker, containerName);
  if (recorded) return recorded;
  const { uid } = input;
  const emptied = await rootSh(docker, containerName, `find ${WORKSPACE_DIR} -mindepth 1 -delete && chown "$1:$1" ${WORKSPACE_DIR}`, [String(uid)]);
  if (emptied.exitCode !== 0) throw new Error(`Cannot prepare ${WORKSPACE_DIR}: ${emptied.stderr.trim()}`);
  const baseSha = input.repo === null
    ? await initTemporaryWorkspace(docker, containerName, uid)
    : await cloneIntoWorkspace(docker, containerName, await withCredential(input));
  const record = JSON.stringify({ baseSha, repo: input.repo === null ? null : redactedRepo(input.repo) });
  const saved = await rootSh(docker, containerName, `mkdir -p "$(dirname ${WORKSPACE_RECORD})" && printf '%s' "$1" > ${WORKSPACE_RECORD}`, [record]);
  if (saved.exitCode !== 0) throw new Error(`Cannot record the workspace base: ${saved.stderr.trim()}`);
  return { baseSha };
}

async function withCredential<T extends { cloneCredential?: string; lookUpCredential?: () => Promise<string | undefined> }>(input: T): Promise<T> {
  if (input.cloneCredential !== undefined || !input.lookUpCredential) return input;
  const credential = await input.lookUpCredential();
  return credential ? { ...input, cloneCredential: credential } : input;
}

async function initTemporaryWorkspace(docker: Docker, containerName: string, uid: number): Promise<string> {
  const { name, email, date } = TEMPORARY_WORKSPACE_COMMIT;
  const result = await execInContainer(docker, containerName, {
    cmd: ['sh', '-c', INIT_TEMPORARY],
    // The UID alone: the engine adds the account's supplementary groups, as for the member's own commands.
    user: String(uid),
    workingDir: '/',
    env: {
      HOME: memberPaths(uid).home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email, GIT_COMMITTER_DATE: date,
    },
  });
  if (result.exitCode !== 0) throw new Error(`Creating the temporary workspace failed: ${result.stderr.trim()}`);
  return result.stdout.trim();
}

/** The repository URL without any user-info (never recorded with a credential). */
function redactedRepo(repo: string): string {
  try {
    const url = new URL(repo);
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return '(unparseable)';
  }
}
