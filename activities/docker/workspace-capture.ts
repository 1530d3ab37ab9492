/**
 * Captures what one turn changed in a member's `/workspace` (docs/publisher.md "Capture"): at the
 * turn's start and end the workspace is snapshotted as a git tree object, as the member, with a
 * throwaway index seeded from `HEAD` (`git add -A` then honours `.gitignore` and keeps tracked
 * files; the agent's own index, HEAD and commits are left alone, and what the agent committed is in
 * the working tree anyway) and a private object directory (the repository's objects are read
 * through alternates, nothing is written into them); at the end `git diff --binary <start> <end>`.
 * Everything read back from the sandbox is untrusted: tree ids must be hex object ids, and the patch
 * is bounded while it is read (a larger one is reported as too large, never read whole).
 */
import type Docker from 'dockerode';
import { execInContainer } from './container-exec';
import { WORKSPACE_DIR } from './docker-sandbox';
import { memberPaths } from './sandbox-container';

/** A git object id (SHA-1 or SHA-256), as the sandbox must print it. */
export const TREE_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** What the end of a turn captured. */
export type TurnCapture =
  | { status: 'captured'; startTree: string; endTree: string; patch: Buffer }
  | { status: 'too_large'; startTree: string; endTree: string; bytes: number }
  | { status: 'failed'; reason: string };

/** Git options that keep the member's repository configuration from changing what is captured. */
const SAFE_GIT = 'git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.noprefix=false -c diff.mnemonicPrefix=false -c diff.external= -c color.ui=false';

/** Snapshot script: `$0` the capture directory; prints the tree id. */
const SNAPSHOT = [
  'set -e',
  'd="$0"',
  'mkdir -p "$d/objects"',
  'repo_objects="$(git rev-parse --path-format=absolute --git-common-dir)/objects"',
  'export GIT_OBJECT_DIRECTORY="$d/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$repo_objects" GIT_INDEX_FILE="$d/index"',
  'rm -f "$GIT_INDEX_FILE"',
  `if git rev-parse -q --verify 'HEAD^{tree}' >/dev/null; then ${SAFE_GIT} read-tree HEAD; fi`,
  `${SAFE_GIT} add -A :/`,
  `${SAFE_GIT} write-tree`,
  'rm -f "$GIT_INDEX_FILE"',
].join('\n');

/**
 * Diff script: `$0` the capture directory, `$1` start tree, `$2` end tree, `$3` the most bytes;
 * prints `size <n>` and, when n <= the most, the patch in base64 (binary-safe over the exec stream).
 */
const DIFF = [
  'set -e',
  'd="$0"',
  'repo_objects="$(git rev-parse --path-format=absolute --git-common-dir)/objects"',
  'export GIT_OBJECT_DIRECTORY="$d/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$repo_objects"',
  `${SAFE_GIT} diff --binary --no-renames --no-ext-diff --no-textconv --no-color --src-prefix=a/ --dst-prefix=b/ "$1" "$2" > "$d/patch"`,
  'size=$(stat -c %s "$d/patch")',
  'echo "size $size"',
  'if [ "$size" -le "$3" ]; then base64 -w0 "$d/patch"; fi',
].join('\n');

/** The member's capture directory (outside `/workspace`, so never part of a snapshot). */
export function captureDir(uid: number): string {
  return `${memberPaths(uid).home}/.agent-capture`;
}

interface CaptureTarget {
  docker: Docker;
  containerName: string;
  uid: number;
}

/**
 * Runs as the member exactly as its own commands run (the UID alone, so with the shared group
 * `agent-workspace`, and `umask 002`). `/workspace` may belong to another member of the group (a
 * fork's capture): it is named a safe directory on the command line, the only trusted place left
 * once the system and global configuration are switched off.
 */
async function asMember(target: CaptureTarget, script: string, args: string[], maxOutputBytes: number): Promise<{ exitCode: number; stdout: string; stderr: string; truncated: boolean }> {
  return execInContainer(target.docker, target.containerName, {
    cmd: ['sh', '-c', `umask 002\n${script}`, ...args],
    user: String(target.uid),
    workingDir: WORKSPACE_DIR,
    env: {
      HOME: memberPaths(target.uid).home, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C',
      GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: WORKSPACE_DIR,
    },
    maxOutputBytes,
  });
}

/** One line of the sandbox's error output for the owner: bounded, single-line. */
function reasonOf(stderr: string): string {
  const line = stderr.trim().split('\n').pop() ?? '';
  return line.slice(0, 300) || 'git failed';
}

/** Snapshots the workspace as a tree; `fresh` empties the capture directory first (the turn's start). */
export async function snapshotWorkspace(target: CaptureTarget, options: { fresh: boolean }): Promise<{ tree: string } | { reason: string }> {
  const dir = captureDir(target.uid);
  if (options.fresh) await asMember(target, 'rm -rf "$0"', [dir], 4096);
  const result = await asMember(target, SNAPSHOT, [dir], 4096);
  const tree = result.stdout.trim();
  if (result.exitCode !== 0) return { reason: `The workspace could not be snapshotted: ${reasonOf(result.stderr)}` };
  if (!TREE_ID.test(tree)) return { reason: 'The workspace snapshot did not name a tree' };
  return { tree };
}

/**
 * The end of a turn: snapshots the workspace again and diffs it against `startTree`, reading at
 * most `maxBytes` of patch. The capture directory is removed afterwards.
 */
export async function captureTurnDiff(target: CaptureTarget, input: { startTree: string; maxBytes: number }): Promise<TurnCapture> {
  if (!TREE_ID.test(input.startTree)) return { status: 'failed', reason: 'The start tree is not an object id' };
  const dir = captureDir(target.uid);
  try {
    const end = await snapshotWorkspace(target, { fresh: false });
    if ('reason' in end) return { status: 'failed', reason: end.reason };
    const limit = Math.ceil(input.maxBytes / 3) * 4 + 64;
    const result = await asMember(target, DIFF, [dir, input.startTree, end.tree, String(input.maxBytes)], limit);
    if (result.exitCode !== 0) return { status: 'failed', reason: `The turn's diff could not be made: ${reasonOf(result.stderr)}` };
    const newline = result.stdout.indexOf('\n');
    const size = /^size (\d{1,15})$/.exec(newline < 0 ? result.stdout : result.stdout.slice(0, newline));
    if (!size) return { status: 'failed', reason: 'The turn\'s diff had no size' };
    const bytes = Number(size[1]);
    if (bytes > input.maxBytes) return { status: 'too_large', startTree: input.startTree, endTree: end.tree, bytes };
    const encoded = result.stdout.slice(newline + 1);
    if (result.truncated || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return { status: 'failed', reason: 'The turn\'s diff was not read whole' };
    const patch = Buffer.from(encoded, 'base64');
    if (patch.length !== bytes) return { status: 'failed', reason: 'The turn\'s diff was not read whole' };
    return { status: 'captured', startTree: input.startTree, endTree: end.tree, patch };
  } finally {
    await asMember(target, 'rm -rf "$0"', [dir], 4096).catch(() => undefined);
  }
}
