/**
 * Task titles (docs/agent-api.md "Titles"): a new chat's title is the first meaningful line of its
 * first prompt, cut to 36 characters. A line is meaningful when something other than markup is left
 * after trimming: blank lines, code fences (```), rules (---, ***) and lines of only `#`, `>`, `-`
 * or `*` are skipped.
 */

export const TITLE_MAX_CHARS = 36;
const FALLBACK_TITLE = 'Untitled chat';
const MARKUP_ONLY = /^[\s#>*\-_=`~|]*$/;

/** The initial title of a chat started with `prompt`. */
export function titleFromPrompt(prompt: string): string {
  for (const raw of prompt.split(/\r?\n/)) {
    const line = raw.replace(/\s+/g, ' ').trim();
    if (line === '' || MARKUP_ONLY.test(line)) continue;
    const text = line.replace(/^(#{1,6}|>|[-*+]|\d+[.)])\s+/, '').trim() || line;
    return cutToChars(text, TITLE_MAX_CHARS);
  }
  return FALLBACK_TITLE;
}

/** The first `max` characters (code points, so a surrogate pair is never split), trimmed. */
export function cutToChars(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : chars.slice(0, max).join('').trimEnd();
}
