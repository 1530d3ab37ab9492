/**
 * Turn marks of the native CLIs' sessions (docs/sandboxes.md "Forks"): after each completed turn
 * the native driver records where the CLI's own session stands, so a fork can start its session
 * from the original's at that turn (both CLIs can fork a session at an earlier point):
 *
 * - Claude Code: the session id and the uuid of the turn's last assistant message, resumed later
 *   with `--resume <session> --resume-session-at <uuid> --fork-session`;
 * - Codex: the thread id and the turn's id, forked later with the app-server's `thread/fork`
 *   (`lastTurnId`: the turns after it are left out of the new thread).
 *
 * The marks live in `<sessionDir>/<cli>.turns.json` beside `<cli>.session`. The fork helper copies
 * them with the session and sets `fork` (the point to fork from); the fork's first successful turn
 * makes its own session from there and clears it. Pure functions; never throw on bad input except
 * {@link cutNativeMarks}, whose refusal is the fork's failure message.
 */
/** Where a native session stands at the end of one completed turn of chat `job`. */
export interface NativeTurnMark {
  job: string;
  seq: number;
  /** Claude Code's session id; Codex's thread id. */
  session: string;
  /** Claude Code: the turn's last assistant message uuid; Codex: the turn's id. */
  at: string;
}

export interface NativeMarks {
  version: 1;
  /** Set by the fork helper: the next run forks the CLI session here instead of resuming `<cli>.session`. */
  fork?: { session: string; at: string };
  turns: NativeTurnMark[];
}

/** The marks file's size limit (the oldest marks go first, see {@link MAX_MARKS}). */
export const MARKS_MAX_BYTES = 1024 * 1024;
/** Marks kept per member: a chat of more turns can be forked only at its latest ones. */
export const MAX_MARKS = 2000;
/** Ids the CLIs print (a session id, a uuid, a turn id): anything else is not stored. */
export const NATIVE_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

export function marksFile(sessionDir: string, dir: string): string {
  return `${sessionDir}/${dir}.turns.json`;
}

function isMark(value: unknown): value is NativeTurnMark {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as Record<string, unknown>;
  return typeof m.job === 'string' && typeof m.seq === 'number' && typeof m.session === 'string' && NATIVE_ID.test(m.session)
    && typeof m.at === 'string' && NATIVE_ID.test(m.at);
}

/** A marks file's content; anything unreadable is no marks. */
export function parseNativeMarks(text: string | undefined): NativeMarks {
  if (text === undefined) return { version: 1, turns: [] };
  try {
    const parsed = JSON.parse(text) as Partial<NativeMarks>;
    if (parsed.version !== 1) return { version: 1, turns: [] };
    const turns = Array.isArray(parsed.turns) ? parsed.turns.filter(isMark) : [];
    const fork = parsed.fork && NATIVE_ID.test(String(parsed.fork.session)) && NATIVE_ID.test(String(parsed.fork.at))
      ? { session: parsed.fork.session, at: parsed.fork.at } : undefined;
    return { version: 1, ...(fork ? { fork } : {}), turns };
  } catch {
    return { version: 1, turns: [] };
  }
}

/** The marks after a completed turn: `mark` added (replacing one of the same turn), the fork point cleared. */
export function withTurnMark(marks: NativeMarks, mark: NativeTurnMark): NativeMarks {
  const turns = marks.turns.filter((m) => !(m.job === mark.job && m.seq === mark.seq));
  turns.push(mark);
  return { version: 1, turns: turns.slice(-MAX_MARKS) };
}

/**
 * The fork member's marks (a copy of the original's): the fork point set to the anchor's mark and
 * the marks after it dropped. Without a mark for the anchor, a fork at the latest turn keeps the
 * copy whole (`undefined`: resume the copied session as it is); a historical one cannot be made.
 */
export function cutNativeMarks(text: string | undefined, source: { from_job_id: string; anchor_seq: number; historical: boolean }): string | undefined {
  const marks = parseNativeMarks(text);
  const index = marks.turns.findIndex((m) => m.job === source.from_job_id && m.seq === source.anchor_seq);
  if (index < 0) {
    if (source.historical) {
      throw new Error(`The original chat's CLI session has no mark for turn ${source.anchor_seq} (a turn run before turn marks, or too long ago), so this fork cannot start after it; fork at the latest turn instead`);
    }
    return undefined;
  }
  const mark = marks.turns[index]!;
  const cut: NativeMarks = { version: 1, fork: { session: mark.session, at: mark.at }, turns: marks.turns.slice(0, index + 1) };
  return JSON.stringify(cut);
}
