/**
 * Generated chat titles (docs/agent-api.md "Titles"): what the model is asked (the first
 * prompt cut to 4,000 characters, at most 256 output tokens) and how its answer becomes a title
 * (one line, trimmed, markdown and quotes stripped, at most 80 characters). An answer with nothing
 * left is unusable (the caller asks again).
 */
import { cutToChars } from './titles';

/** Characters of the first prompt sent to the model. */
export const TITLE_INPUT_MAX_CHARS = 4_000;
/** `max_tokens` of a title call. */
export const TITLE_MAX_TOKENS = 256;
/** Longest generated title kept, in characters (code points). */
export const GENERATED_TITLE_MAX_CHARS = 80;

/** The system prompt of a title call; tests tell title calls from turns by it. */
export const TITLE_SYSTEM_PROMPT = [
  'You name chats between a user and an autonomous coding agent.',
  'Read the user\'s first message and reply with a short, specific title for the chat (3 to 8 words, at most 60 characters)',
  'in the language of the message. Reply with the title only: no quotes, no markdown, no trailing period, no explanation.',
].join(' ');

/** The chat-completions body of a title call for `prompt` (the chat's first prompt). */
export function titleChatBody(model: string, prompt: string): Record<string, unknown> {
  return {
    model,
    messages: [
      { role: 'system', content: TITLE_SYSTEM_PROMPT },
      { role: 'user', content: cutToChars(prompt, TITLE_INPUT_MAX_CHARS) },
    ],
    max_tokens: TITLE_MAX_TOKENS,
    stream: false,
  };
}

const QUOTE_PAIRS: ReadonlyArray<readonly [string, string]> = [
  ['"', '"'], ["'", "'"], ['`', '`'], ['\u201c', '\u201d'], ['\u2018', '\u2019'], ['\u00ab', '\u00bb'], ['\u201e', '\u201c'], ['*', '*'], ['_', '_'],
];

/** Removes matching quotes or emphasis around the whole text, repeatedly (`"**Fix it**"` → `Fix it`). */
function unwrap(text: string): string {
  let current = text.trim();
  for (let changed = true; changed;) {
    changed = false;
    for (const [open, close] of QUOTE_PAIRS) {
      if (current.length >= open.length + close.length && current.startsWith(open) && current.endsWith(close)) {
        current = current.slice(open.length, current.length - close.length).trim();
        changed = true;
      }
    }
  }
  return current;
}

/** The first line with text, skipping code fences and reasoning blocks. */
function firstTextLine(content: string): string | undefined {
  const visible = content.replace(/<think>[\s\S]*?(<\/think>|$)/gi, '');
  return visible.split(/\r?\n/).map((line) => line.trim()).find((line) => line !== '' && !line.startsWith('```'));
}

/**
 * The title in a model's answer, or undefined when nothing usable is left: first line with text;
 * a `Title:` label, heading/quote/list markers, inline markdown (`**`, `__`, backticks, links) and
 * surrounding quotes removed; whitespace collapsed; a trailing period dropped; cut to 80 characters.
 */
export function sanitizeGeneratedTitle(content: unknown): string | undefined {
  if (typeof content !== 'string') return undefined;
  const line = firstTextLine(content);
  if (line === undefined) return undefined;
  let text = line
    .replace(/^(#{1,6}|>|[-*+]|\d+[.)])\s+/, '')
    .replace(/^\**\s*title\s*\**\s*:\s*/i, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/(\*\*|__|`)/g, '')
    .replace(/\s+/g, ' ');
  text = unwrap(text).replace(/\.+$/, '').trim();
  text = unwrap(text);
  if (!/[\p{L}\p{N}]/u.test(text)) return undefined;
  return cutToChars(text, GENERATED_TITLE_MAX_CHARS);
}
