/**
 * The local `count_tokens` estimate (docs/inference-surfaces.md "Messages surface", method and
 * measured error there). Text: each run of ASCII letters counts ⌈length / 7⌉ tokens (most English
 * words are one token, long ones two), every other non-space character 0.6 (digits, punctuation,
 * non-ASCII); an image 1,600 (about the largest image the messages API accepts without resizing: an
 * upper bound, since its size is not decoded); tool calls and the tools list as their JSON text;
 * 3 tokens of framing per message. One pass over the characters, no allocation per word.
 */

/** Tokens of framing (role markers, separators) counted for each message. */
export const PER_MESSAGE_TOKENS = 3;
/** Tokens counted for one image block. */
export const IMAGE_TOKENS = 1600;

const LETTERS_PER_TOKEN = 7;
const OTHER_CHAR_TOKENS = 0.6;

function isAsciiLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

/** Estimated tokens of a piece of text. */
export function estimateTextTokens(text: string): number {
  let tokens = 0;
  let run = 0;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (isAsciiLetter(code)) {
      run += 1;
      continue;
    }
    if (run > 0) tokens += Math.ceil(run / LETTERS_PER_TOKEN);
    run = 0;
    // A surrogate pair is one character: count its high half only.
    if (!isSpace(code) && !(code >= 0xdc00 && code <= 0xdfff)) tokens += OTHER_CHAR_TOKENS;
  }
  if (run > 0) tokens += Math.ceil(run / LETTERS_PER_TOKEN);
  return tokens;
}

function partTokens(part: unknown): number {
  if (typeof part === 'string') return estimateTextTokens(part);
  if (part === null || typeof part !== 'object') return 0;
  const p = part as { type?: unknown; text?: unknown };
  if (p.type === 'image_url') return IMAGE_TOKENS;
  return typeof p.text === 'string' ? estimateTextTokens(p.text) : 0;
}

/** Estimated input tokens of a translated messages request (its chat body: messages and tools). */
export function estimateInputTokens(chat: { messages: readonly unknown[]; tools?: unknown }): number {
  let tokens = 0;
  for (const message of chat.messages) {
    const m = message as { content?: unknown; tool_calls?: unknown };
    tokens += PER_MESSAGE_TOKENS;
    if (Array.isArray(m.content)) for (const part of m.content) tokens += partTokens(part);
    else tokens += partTokens(m.content);
    if (Array.isArray(m.tool_calls)) tokens += estimateTextTokens(JSON.stringify(m.tool_calls));
  }
  if (Array.isArray(chat.tools) && chat.tools.length > 0) tokens += estimateTextTokens(JSON.stringify(chat.tools));
  return Math.max(1, Math.ceil(tokens));
}
