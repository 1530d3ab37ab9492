/**
 * Extracts textual tool-call blocks (`<tool_call>...</tool_call>`) from assistant text. The block
 * syntax inside is a `ToolFormat` (see tool-formats.ts); text outside blocks stays content.
 */
import { type ParsedCall, type Part, type TextParser, TagSeeker, heldSuffixLength, pushContent } from './text';

/** A textual tool-call syntax: the block's tags and a parser for what is between them. */
export interface ToolFormat {
  open: string;
  close: string;
  /** Parses the text between the tags; undefined when it is not a well-formed call. */
  parse(body: string): ParsedCall | undefined;
}

/**
 * Whitespace next to extracted calls: dropped before a call, after the last one and at the start
 * of the content; kept between two pieces of text. Trailing whitespace is held back until it is
 * known which of these it is.
 */
class CallGaps {
  private pending = '';
  private emitted = false;
  private afterCall = false;

  /** Returns the part of `text` that can be emitted now. */
  take(text: string): string {
    let all = this.pending === '' ? text : this.pending + text;
    if (this.afterCall && !this.emitted) all = all.trimStart();
    const body = all.trimEnd();
    this.pending = all.slice(body.length);
    if (body === '') return '';
    this.afterCall = false;
    this.emitted = true;
    return body;
  }

  /** A block opens: returns (and forgets) the whitespace held before it. */
  release(): string {
    const held = this.pending;
    this.pending = '';
    return held;
  }

  /** A call was extracted: the whitespace before it is gone. */
  called(): void {
    this.afterCall = true;
    this.pending = '';
  }

  /** End of text: the held whitespace, unless a call came last. */
  end(): string {
    const held = this.afterCall ? '' : this.pending;
    this.pending = '';
    return held;
  }
}

/**
 * Tool-call splitter. Content is forwarded as it arrives except a possible partial opening tag
 * and trailing whitespace (see CallGaps). A block is held until its closing tag; a block that
 * does not parse, or is still open at the end, is emitted as raw content.
 */
export class ToolCallSplitter implements TextParser {
  private inCall = false;
  private held = '';
  private beforeCall = '';
  private readonly body: TagSeeker;
  private readonly text = new CallGaps();

  constructor(private readonly format: ToolFormat) {
    this.body = new TagSeeker([format.close]);
  }

  /** @inheritdoc */
  push(text: string, out: Part[]): void {
    let rest: string | undefined = text;
    while (rest !== undefined) rest = this.inCall ? this.stepCall(rest, out) : this.stepText(rest, out);
  }

  /** @inheritdoc */
  finish(out: Part[]): void {
    if (this.inCall) {
      pushContent(out, this.text.take(this.beforeCall + this.format.open + this.body.take()));
      this.inCall = false;
      this.beforeCall = '';
    } else {
      pushContent(out, this.text.take(this.held));
      this.held = '';
    }
    pushContent(out, this.text.end());
  }

  /** Handles text outside a block; returns the text after an opening tag, if one completed. */
  private stepText(text: string, out: Part[]): string | undefined {
    const { open } = this.format;
    const all = this.held === '' ? text : this.held + text;
    const at = all.indexOf(open);
    if (at >= 0) {
      this.held = '';
      pushContent(out, this.text.take(all.slice(0, at)));
      this.beforeCall = this.text.release();
      this.inCall = true;
      return all.slice(at + open.length);
    }
    const keep = heldSuffixLength(all, open);
    this.held = keep === 0 ? '' : all.slice(all.length - keep);
    pushContent(out, this.text.take(keep === 0 ? all : all.slice(0, all.length - keep)));
    return undefined;
  }

  /** Handles text inside a block; returns the text after the closing tag, if it arrived. */
  private stepCall(text: string, out: Part[]): string | undefined {
    const hit = this.body.push(text);
    if (hit === undefined) return undefined;
    this.inCall = false;
    const { open, close } = this.format;
    // An opening tag inside the block means the earlier block was never closed: that part is raw text.
    const reopened = hit.before.lastIndexOf(open);
    const unclosed = reopened < 0 ? '' : open + hit.before.slice(0, reopened);
    const body = reopened < 0 ? hit.before : hit.before.slice(reopened + open.length);
    const call = this.format.parse(body);
    if (call === undefined) {
      pushContent(out, this.text.take(this.beforeCall + unclosed + open + body + close));
    } else {
      if (unclosed !== '') pushContent(out, this.text.take(this.beforeCall + unclosed));
      out.push({ kind: 'tool', call });
      this.text.called();
    }
    this.beforeCall = '';
    return hit.after;
  }
}

/**
 * Decodes one argument value: the single leading and trailing newline are removed; numbers,
 * booleans, null, objects and arrays are JSON-decoded; anything else (including JSON strings and
 * integers beyond 2^53, which would lose digits) stays the raw string.
 */
export function parseArgValue(raw: string): unknown {
  const start = raw.startsWith('\n') ? 1 : 0;
  const end = raw.length > start && raw.endsWith('\n') ? raw.length - 1 : raw.length;
  const value = raw.slice(start, end);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return value;
  }
  if (typeof parsed === 'string') return value;
  if (typeof parsed === 'number' && Number.isInteger(parsed) && !Number.isSafeInteger(parsed)) return value;
  return parsed;
}

/** Whether `text` is a plausible function or argument name: non-empty, no whitespace or tag brackets. */
export function isName(text: string): boolean {
  return text !== '' && !/[\s<>]/.test(text);
}
