/**
 * The shared text rule (`lib/text.ts`) applied to a request-log row: every string of the row
 * (each text column and every value and key of `metadata`, at any depth) with its NUL characters
 * and unpaired surrogates replaced by the visible U+FFFD. These values are only logged (the model
 * name asked for, `User-Agent`, `X-Session-Id`, an upstream's error message in the routing
 * attribution…), so the request was answered and its row is kept, marked, rather than refused:
 * PostgreSQL refuses both characters in `text` and `jsonb`, and one such row would fail its whole
 * batch. See docs/request-log.md ("Text").
 */
import { cleanText } from '../../lib/text';
import type { ApiLogRow } from './row';

/**
 * `value` with every string (and object key) cleaned; the same reference when nothing needed
 * cleaning, otherwise a copy of the parts that changed (the input is never modified: metadata
 * holds references into the request's state).
 */
export function cleanValue(value: unknown): unknown {
  if (typeof value === 'string') return cleanText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i += 1) {
      const item: unknown = value[i];
      const cleaned = cleanValue(item);
      if (cleaned !== item) (copy ??= value.slice())[i] = cleaned;
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    const cleanKey = cleanText(key);
    const cleaned = cleanValue(item);
    if (cleanKey === key && cleaned === item) continue;
    copy ??= { ...record };
    if (cleanKey !== key) delete copy[key];
    copy[cleanKey] = cleaned;
  }
  return copy ?? value;
}

/** The row with every string cleaned (see {@link cleanValue}); the same row when it was clean. */
export function cleanRow(row: ApiLogRow): ApiLogRow {
  return cleanValue(row) as ApiLogRow;
}

/**
 * Whether the JSON text of a row may hold a NUL or an unpaired surrogate. `JSON.stringify` writes
 * both as `\u` escapes (`\u0000`, `\ud800`) and never writes them raw, so a text without a `\u`
 * holds neither: one scan of the text clears the common row, and only a row with an escape (those
 * two, another control character, or a literal backslash before a `u`) is walked by {@link cleanRow}.
 */
export function mayNeedCleaning(text: string): boolean {
  return text.includes('\\u');
}
