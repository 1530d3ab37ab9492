/**
 * Per-message features the automation score reads (spec 2.12, `user_message_shape`): of the
 * newest user message's stripped text, its length in characters (code points), its Shannon
 * entropy in bits per character, and a 64-bit hash (the first 16 hex digits of its SHA-256).
 * Computed at flush time, never on the request path.
 */
import { createHash } from 'node:crypto';

export interface MessageShape {
  chars: number;
  entropy: number;
  /** Null for a message without text (e.g. image parts only). */
  hash: string | null;
}

/** The text of a message content: a string as is, or the `text` parts of a parts array joined by newlines. */
export function messageText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content as unknown[]) {
    const text = (part as { text?: unknown } | null)?.text;
    if (typeof text === 'string') texts.push(text);
  }
  return texts.join('\n');
}

/** Shannon entropy of the code points of `text`, bits per character (0 for empty text). */
export function shannonEntropy(text: string): number {
  const counts = new Map<number, number>();
  let total = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    counts.set(cp, (counts.get(cp) ?? 0) + 1);
    total += 1;
  }
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / total;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Length (code points) of `text`. */
function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** The shape of a message content, or undefined when it carries no text at all. */
export function messageShape(content: unknown): MessageShape | undefined {
  const raw = messageText(content);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text.length === 0) return { chars: 0, entropy: 0, hash: null };
  return {
    chars: codePoints(text),
    entropy: Math.round(shannonEntropy(text) * 1e4) / 1e4,
    hash: createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16),
  };
}
