/**
 * The one rule for untrusted text (from clients, upstreams, sandboxes, CLIs) before it reaches
 * PostgreSQL or a log: no NUL character (PostgreSQL's `text` and `json` refuse it) and no
 * unpaired UTF-16 surrogate (it has no UTF-8 form). Inputs are refused with a 400 naming the
 * field ({@link findBadText}); values that are only logged are stored with the visible
 * replacement U+FFFD instead ({@link cleanText}). See docs/security.md.
 */

declare global {
  // Node 20 ships both (ES2024); the project's `lib` is ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** What is wrong with a text, if anything. */
export type TextProblem = 'nul' | 'surrogate';

/** The visible stand-in for a NUL or an unpaired surrogate in stored or logged text. */
export const REPLACEMENT = '\uFFFD';

/** How deep JSON may nest (objects and arrays) before it is refused unparsed. */
export const MAX_JSON_DEPTH = 64;

/** What makes `text` unfit for PostgreSQL or a log, or `undefined` when it is fine. */
export function textProblem(text: string): TextProblem | undefined {
  if (text.includes('\0')) return 'nul';
  if (!text.isWellFormed()) return 'surrogate';
  return undefined;
}

/** `text` with each NUL and unpaired surrogate replaced by U+FFFD (the same string when clean). */
export function cleanText(text: string): string {
  const wellFormed = text.isWellFormed() ? text : text.toWellFormed();
  return wellFormed.includes('\0') ? wellFormed.replaceAll('\0', REPLACEMENT) : wellFormed;
}

/** A human description of a problem, for 400 messages. */
export function describeTextProblem(problem: TextProblem): string {
  return problem === 'nul' ? 'must not contain NUL characters (\\u0000)' : 'must not contain unpaired UTF-16 surrogates';
}

export interface BadText {
  /** Dotted path of the offending value (`messages.0.content`); keys are checked too. */
  path: string;
  problem: TextProblem;
}

/**
 * The first string (value or object key) in a parsed JSON value that breaks the rule, with its
 * path. Iterative, so any depth is safe; callers bound depth before parsing anyway.
 */
export function findBadText(value: unknown, rootPath = ''): BadText | undefined {
  const stack: Array<[unknown, string]> = [[value, rootPath]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) return { path, problem };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], join(path, String(i))]);
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const childPath = join(path, key);
        const problem = textProblem(key);
        if (problem) return { path: childPath, problem };
        stack.push([child, childPath]);
      }
    }
  }
  return undefined;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * How deep the JSON text nests (brackets outside strings), stopping as soon as `limit` is
 * passed. Linear over the bytes, no allocation: run it before `JSON.parse` so no recursive
 * walk after the parse can overflow the stack.
 */
export function jsonDepthExceeds(raw: Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const byte = raw[i];
    if (byte === 0x22) {
      // A string: run to its closing quote in a loop of its own (a backslash skips the escaped byte).
      for (i++; i < n; i++) {
        const inner = raw[i];
        if (inner === 0x22) break;
        if (inner === 0x5c) i++;
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > limit) return true;
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
  return false;
}
