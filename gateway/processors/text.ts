/**
 * Building blocks for incremental text parsing: the part model, whitespace trimming across chunk
 * boundaries, and tag search that holds back only a possible partial tag.
 */

/** A parsed tool call: the function name and its decoded arguments. */
export interface ParsedCall {
  name: string;
  args: Record<string, unknown>;
}

/** One piece of parser output, in the order the model produced it. */
export type Part =
  | { kind: 'content'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'tool'; call: ParsedCall };

/** An incremental parser of assistant text: push text as it arrives, then finish once. */
export interface TextParser {
  /** Consumes the next piece of text; appends the parts that are now certain to `out`. */
  push(text: string, out: Part[]): void;
  /** Ends the text; appends every part still held back to `out` (nothing is dropped). */
  finish(out: Part[]): void;
}

/** Appends a content part unless `text` is empty. */
export function pushContent(out: Part[], text: string): void {
  if (text !== '') out.push({ kind: 'content', text });
}

/** Appends a reasoning part unless `text` is empty. */
export function pushReasoning(out: Part[], text: string): void {
  if (text !== '') out.push({ kind: 'reasoning', text });
}

/** The trivial parser: all text is content. */
export class PlainText implements TextParser {
  /** @inheritdoc */
  push(text: string, out: Part[]): void {
    pushContent(out, text);
  }

  /** @inheritdoc */
  finish(): void {
    // Nothing is ever held back.
  }
}

/**
 * Trims whitespace of a section of text that arrives in pieces: optionally drops the section's
 * leading whitespace, and optionally holds trailing whitespace back until more text follows
 * (so that it can be dropped if the section ends).
 */
export class StreamTrim {
  private started: boolean;
  private pending = '';

  /** `trimStart`: drop leading whitespace; `trimEnd`: hold trailing whitespace back. */
  constructor(trimStart: boolean, private readonly trimEnd: boolean) {
    this.started = !trimStart;
  }

  /** Returns the part of `text` that can be emitted now. */
  take(text: string): string {
    let rest = text;
    if (!this.started) {
      rest = rest.trimStart();
      if (rest === '') return '';
      this.started = true;
    }
    if (!this.trimEnd) return rest;
    const body = rest.trimEnd();
    if (body === '') {
      this.pending += rest;
      return '';
    }
    const emitted = this.pending === '' ? body : this.pending + body;
    this.pending = body.length === rest.length ? '' : rest.slice(body.length);
    return emitted;
  }

  /** Returns and forgets the trailing whitespace held back so far. */
  release(): string {
    const held = this.pending;
    this.pending = '';
    return held;
  }
}

/** Length of the longest proper prefix of `tag` that `text` ends with (text that may start a tag). */
export function heldSuffixLength(text: string, tag: string): number {
  const max = Math.min(tag.length - 1, text.length);
  const first = tag.charCodeAt(0);
  for (let k = max; k > 0; k -= 1) {
    const start = text.length - k;
    if (text.charCodeAt(start) === first && text.startsWith(tag.slice(0, k), start)) return k;
  }
  return 0;
}

/** The result of a tag search: which tag was found, the text before it and the text after it. */
export interface TagHit {
  tag: string;
  before: string;
  after: string;
}

/**
 * Accumulates text until one of a few tags appears. Each push searches only the new text plus a
 * short overlap with the previous text, so the cost is linear in the total length.
 */
export class TagSeeker {
  private pieces: string[] = [];
  private tail = '';
  private readonly overlap: number;

  constructor(private readonly tags: readonly string[]) {
    this.overlap = Math.max(...tags.map((t) => t.length)) - 1;
  }

  /** Appends `text`; returns the first tag occurrence once one is complete (and resets). */
  push(text: string): TagHit | undefined {
    const window = this.tail + text;
    let hitAt = -1;
    let hitTag = '';
    for (const tag of this.tags) {
      const at = window.indexOf(tag);
      if (at >= 0 && (hitAt < 0 || at < hitAt)) [hitAt, hitTag] = [at, tag];
    }
    if (hitAt < 0) {
      this.pieces.push(text);
      this.tail = window.slice(-this.overlap);
      return undefined;
    }
    const full = this.take() + text;
    const at = full.length - window.length + hitAt;
    return { tag: hitTag, before: full.slice(0, at), after: full.slice(at + hitTag.length) };
  }

  /** Returns everything accumulated so far and resets. */
  take(): string {
    const all = this.pieces.join('');
    this.pieces = [];
    this.tail = '';
    return all;
  }
}
