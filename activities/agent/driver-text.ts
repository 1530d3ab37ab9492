/**
 * Small text helpers shared by the drivers: bounding text that goes to the model or into an
 * event (with a visible marker), removing a secret from text that may be shown, and reading the
 * untrusted JSON a CLI prints.
 */

/** A JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Keeps the first `maxChars` characters of `text`, marking how much was cut. */
export function truncateWithMarker(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n…[truncated ${text.length - maxChars} chars]`;
}

/** Keeps the last `maxChars` characters of `text` (a stderr tail), marking the cut. */
export function tailWithMarker(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `…[${text.length - maxChars} earlier chars cut]\n${text.slice(-maxChars)}`;
}

/** Replaces every occurrence of `secret` in `text` (no-op for empty secrets). */
export function redactSecret(text: string, secret: string): string {
  return secret ? text.split(secret).join('***') : text;
}

/** A value for an event payload: itself when its JSON fits in `maxChars`, else a bounded excerpt of the JSON. */
export function boundedValue(value: unknown, maxChars: number): unknown {
  const json = JSON.stringify(value) ?? 'null';
  return json.length <= maxChars ? value : { truncated: true, excerpt: truncateWithMarker(json, maxChars) };
}
