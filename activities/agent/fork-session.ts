/**
 * The fork helper (docs/sandboxes.md "Forks"): before a fork's first turn runs its driver, the
 * fork member's native session is made from the original member's, in the group's container.
 *
 * - The original's whole session directory is copied (as root, then owned by the fork member):
 *   the native CLIs' files (`codex/`, `claude/`, `<cli>.session`, `<cli>.turns.json`) are the
 *   fork's own from then on (each member writes only its own copy). The CLI's turn marks
 *   (native-marks.ts) are cut after the anchor, with the anchor's mark as the fork point: the
 *   fork's first run makes a new CLI session from the original's, cut there (both CLIs fork a
 *   session at an earlier message or turn). A session without a mark for the anchor is resumed
 *   whole when the fork is at the latest turn; a historical fork fails, as below.
 * - The built-in driver's session is cut after the original's anchor turn, using the turn marks
 *   the driver writes (`BuiltinSession.turns`); a historical fork without a mark for its anchor
 *   fails its turn with a clear message rather than continuing from the wrong point.
 * - A marker (`fork.json`, written last) makes the helper run once: a retried attempt finds it and
 *   keeps the session the fork has made since.
 */
import { posix } from 'node:path';
import type Docker from 'dockerode';
import { execInContainer } from '../docker/container-exec';
import { DockerSandbox } from '../docker/docker-sandbox';
import { memberPaths } from '../docker/sandbox-container';
import { FORK_HELPER_VERSION } from '../../lib/execution-profiles';
import { BUILTIN_SESSION_FILE, SESSION_MAX_BYTES, parseBuiltinSession } from './builtin-driver';
import { MARKS_MAX_BYTES, cutNativeMarks, marksFile } from './native-marks';
import { SandboxFileError } from './types';

export const FORK_MARKER_FILE = 'fork.json';
/** The native CLIs' directories under a session directory (native-driver.ts). */
const CLI_DIRS = ['codex', 'claude'] as const;

export interface ForkSource {
  from_job_id: string;
  from_uid: number;
  anchor_seq: number;
  historical: boolean;
}

/** Root script: copy the original's session directory into the fork's once (exit 10: already made). */
const COPY_SESSION = [
  'set -e',
  'from="$1"; to="$2"; uid="$3"',
  'if [ -e "$to/fork.json" ]; then exit 10; fi',
  'mkdir -p "$to"',
  'if [ -d "$from" ]; then cp -a "$from/." "$to/"; fi',
  'rm -f "$to/fork.json"',
  // Codex's databases name its files by absolute path, the original member's (unreadable to the
  // fork): without them Codex reads the copied session files and indexes them again.
  'rm -f "$to"/codex/*.sqlite "$to"/codex/*.sqlite-*',
  'chown -R "$uid:$uid" "$to"',
].join('\n');

/** Makes member `uid`'s session from `source`; false when it was made before (nothing changed). */
export async function prepareForkSession(docker: Docker, containerName: string, uid: number, source: ForkSource): Promise<boolean> {
  const from = memberPaths(source.from_uid).sessionDir;
  const to = memberPaths(uid).sessionDir;
  const copied = await execInContainer(docker, containerName, { cmd: ['sh', '-c', COPY_SESSION, 'fork-session', from, to, String(uid)], user: '0' });
  if (copied.exitCode === 10) return false;
  if (copied.exitCode !== 0) throw new Error(`Copying the original chat's session for the fork failed (${copied.exitCode}): ${copied.stderr.trim()}`);
  const member = new DockerSandbox(docker, containerName, uid);
  const sessionPath = posix.join(to, BUILTIN_SESSION_FILE);
  const text = await readOptional(member, sessionPath, SESSION_MAX_BYTES);
  if (text !== undefined) await member.writeFile(sessionPath, cutBuiltinSession(text, source));
  for (const dir of CLI_DIRS) {
    const session = await readOptional(member, posix.join(to, `${dir}.session`), 1024);
    const marks = await readOptional(member, marksFile(to, dir), MARKS_MAX_BYTES);
    if (session === undefined && marks === undefined) continue; // the chat never ran this CLI
    const cut = cutNativeMarks(marks, source);
    if (cut !== undefined) await member.writeFile(marksFile(to, dir), cut);
  }
  const marker = { helper_version: FORK_HELPER_VERSION, from_job_id: source.from_job_id, from_uid: source.from_uid, anchor_seq: source.anchor_seq };
  await member.writeFile(posix.join(to, FORK_MARKER_FILE), `${JSON.stringify(marker)}\n`);
  return true;
}

async function readOptional(member: DockerSandbox, path: string, maxBytes: number): Promise<string | undefined> {
  return member.readFile(path, maxBytes).catch((err: unknown) => {
    if (err instanceof SandboxFileError) return undefined;
    throw err;
  });
}

/**
 * The built-in session cut after the original's anchor turn. Without a mark for the anchor, a fork
 * at the latest turn keeps the session whole; a historical one cannot be cut and fails.
 */
export function cutBuiltinSession(text: string, source: ForkSource): string {
  const session = parseBuiltinSession(text);
  if (!session) return text;
  const index = session.turns.findIndex((mark) => mark.job === source.from_job_id && mark.seq === source.anchor_seq);
  if (index < 0) {
    if (source.historical) {
      throw new Error(`The original chat's conversation has no mark for turn ${source.anchor_seq}, so this fork cannot start after it; fork at the latest turn instead`);
    }
    return text;
  }
  const mark = session.turns[index]!;
  return JSON.stringify({ version: 1, messages: session.messages.slice(0, mark.end), turns: session.turns.slice(0, index + 1) });
}
