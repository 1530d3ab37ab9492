/**
 * Per-message features the automation score reads (docs/automation-score.md, `user_message_shape`):
 * of the newest user message's stripped text, its length in characters (code points), its Shannon
 * entropy in bits per character, and a 64-bit hash (the first 16 hex digits of its SHA-256).
 * Computed at flush time, never on the request path.
 */
import { hash } from 'node:crypto';

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

/** Per-code-unit counts, reused by every call (flush time is single-threaded); reset after each use. */
const bmpCounts = new Uint32Array(0x10000);
const seen: number[] = [];

/** Code points of `text` and their Shannon entropy in bits per character (0 for empty text). One pass. */
export function characterStats(text: string): { chars: number; entropy: number } {
  let total = 0;
  let astral: Map<number, number> | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        const cp = (unit - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
        astral ??= new Map();
        astral.set(cp, (astral.get(cp) ?? 0) + 1);
        total += 1;
        i += 1;
        continue;
      }
    }
    const before = bmpCounts[unit]!;
    if (before === 0) seen.push(unit);
    bmpCounts[unit] = before + 1;
    total += 1;
  }
  let bits = 0;
  const add = (n: number) => {
    const p = n / total;
    bits -= p * Math.log2(p);
  };
  for (const unit of seen) {
    add(bmpCounts[unit]!);
    bmpCounts[unit] = 0;
  }
  seen.length = 0;
  if (astral) for (const n of astral.values()) add(n);
  return { chars: total, entropy: bits };
}

/** Shannon entropy of the code points of `text`, bits per character (0 for empty text). */
export function shannonEntropy(text: string): number {
  return characterStats(text).entropy;
}

/** The shape of a message content, or undefined when it carries no text at all. */
export function messageShape(content: unknown): MessageShape | undefined {
  const raw = messageText(content);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text.length === 0) return { chars: 0, entropy: 0, hash: null };
  const stats = characterStats(text);
  return {
    chars: stats.chars,
    entropy: Math.round(stats.entropy * 1e4) / 1e4,
    hash: hash('sha256', text, 'hex').slice(0, 16), // one-shot: no Hash object per row (see lib/crypto.ts)
  };
}
