/**
 * Chat-completions stream chunks → messages-surface events, one chunk at a time (nothing is held
 * back: each chunk's events are written with it; docs/inference-surfaces.md "Messages surface").
 *
 * | chat chunk | events |
 * |---|---|
 * | first chunk | `message_start` (usage zero), `ping` |
 * | `delta.reasoning_content` | `content_block_start` thinking (once), `content_block_delta` `thinking_delta` |
 * | `delta.content` | `content_block_start` text (once per run), `content_block_delta` `text_delta` |
 * | `delta.tool_calls[k]` | `content_block_start` tool_use (new `k`), `content_block_delta` `input_json_delta` |
 * | `finish_reason`, usage chunk | remembered |
 * | `[DONE]` / end | `content_block_stop`, `message_delta` (stop_reason, stop_sequence, usage), `message_stop` |
 *
 * A block is stopped when a block of another kind (or another tool call) starts. A late argument
 * fragment of an already stopped tool call is still sent, with that call's block index. A tool
 * call's `content_block_start` waits for its first argument fragment (or the next other event), so
 * a name some upstreams send in pieces before the arguments arrives whole; nothing else waits.
 */
import type { ChatCompletionChunk, ToolCallDelta } from '../../processors/types';
import type { FrameBytes, StreamShape } from '../../surfaces/chat-stream';
import type { Usage } from '../../surfaces/usage';
import { messagesErrorEvent } from './errors';
import { messageId, messagesUsage, stopInfo, type MessageContext } from './response';

type Json = Record<string, unknown>;

function event(type: string, payload: string): string {
  return `event: ${type}\ndata: ${payload}\n\n`;
}

/**
 * A `content_block_delta` frame: `kind` the delta type, `field` its text field. Written as a
 * template around the one string that needs escaping (the hot path of every streamed token).
 */
function blockDelta(index: number, kind: string, field: string, value: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"${kind}","${field}":${JSON.stringify(value)}}}\n\n`;
}

function textDeltaFrame(index: number, literal: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${literal}}}\n\n`;
}

const ZERO_USAGE = JSON.stringify(messagesUsage(undefined));
const PING = event('ping', '{"type":"ping"}');
const MESSAGE_STOP = event('message_stop', '{"type":"message_stop"}');

const CONTENT_DELTA = '"choices":[{"index":0,"delta":{"content":"';
const QUOTE = 34;
const BACKSLASH = 92;
const CLOSE_BRACE = 125;

/**
 * The JSON string literal (quotes included) of a chunk whose only choice is index 0 with a delta
 * of exactly one non-empty `content` and no finish reason, or `undefined` for any other chunk.
 * Scans the text; never parses it. The literal is valid JSON as the upstream wrote it (the
 * splitter decoded the bytes; an unterminated literal answers `undefined`).
 */
export function plainContentLiteral(data: string): string | undefined {
  const at = data.indexOf(CONTENT_DELTA);
  if (at === -1 || data.indexOf(CONTENT_DELTA, at + 1) !== -1) return undefined;
  const open = at + CONTENT_DELTA.length - 1;
  let i = open + 1;
  for (; i < data.length; i += 1) {
    const c = data.charCodeAt(i);
    if (c === BACKSLASH) i += 1;
    else if (c === QUOTE) break;
  }
  if (i >= data.length || i === open + 1 || data.charCodeAt(i + 1) !== CLOSE_BRACE) return undefined;
  // After the delta: only `finish_reason: null` and fields of no meaning here, and no second choice.
  const rest = data.slice(i + 2);
  if (rest.includes('"index"') || rest.includes('"tool_calls"') || rest.includes('"reasoning')) return undefined;
  const finish = rest.indexOf('"finish_reason":');
  if (finish !== -1 && !rest.startsWith('null', finish + 16)) return undefined;
  return data.slice(open, i + 1);
}

// `{"cont`: under 7 bytes and led by a byte that is rare in a chunk, so Buffer#indexOf memchrs it.
const CONTENT_PROBE = Buffer.from('{"cont');
const CONTENT_DELTA_BYTES = Buffer.from(CONTENT_DELTA);
const PROBE_OFFSET = CONTENT_DELTA.length - '{"content":"'.length;
/** Keys (after their opening quote) that send an event to the parsing path, as in {@link plainContentLiteral}. */
const REST_KEYS = [Buffer.from('index"'), Buffer.from('tool_calls"'), Buffer.from('reasoning')];
const FINISH_KEY = Buffer.from('finish_reason":null');
/** Those keys by their first byte (the scan looks one up at each `"`). */
const KEY_BY_LETTER: Array<Buffer | undefined> = [];
for (const key of [...REST_KEYS, FINISH_KEY]) KEY_BY_LETTER[key[0]!] = key;
const TEXT_DELTA_SUFFIX = Buffer.from('}}\n\n');

/** The bytes of a text-delta frame before the literal, for block `index` (a few indexes, kept). */
const textDeltaPrefixes: Buffer[] = [];
function textDeltaPrefix(index: number): Buffer {
  let prefix = textDeltaPrefixes[index];
  if (prefix === undefined) {
    prefix = Buffer.from(textDeltaFrame(index, '').slice(0, -4));
    if (index < 64) textDeltaPrefixes[index] = prefix;
  }
  return prefix;
}

/** Whether `chunk[at, at + length)` equals `key[0, length)` (a short JS loop: cheaper than a native call here). */
function bytesAt(chunk: Buffer, at: number, key: Buffer, length = key.length): boolean {
  if (at < 0 || at + length > chunk.length) return false;
  for (let k = 0; k < length; k += 1) if (chunk[at + k] !== key[k]) return false;
  return true;
}

/**
 * {@link plainContentLiteral} on bytes: the `[start, end)` range of the content's JSON string
 * literal (quotes included) in the event data `chunk[start, end)`, or `undefined`, by the text
 * version's rules. One native search (the content key, found in this event or, when absent, in
 * the next one); the rest is a scan of the event's own bytes.
 */
export function plainContentBytes(chunk: Buffer, start: number, end: number): [number, number] | undefined {
  const probe = chunk.indexOf(CONTENT_PROBE, start);
  const open = probe + CONTENT_DELTA.length - PROBE_OFFSET - 1;
  if (probe === -1 || open >= end) return undefined;
  const at = probe - PROBE_OFFSET;
  if (at < start || !bytesAt(chunk, at, CONTENT_DELTA_BYTES)) return undefined;
  // A second `"choices":[{"index":0,…` (never inside the literal, whose quotes are escaped) comes
  // with an `"index"` key after it, which the scan below refuses.
  let i = open + 1;
  for (; i < end; i += 1) {
    const c = chunk[i];
    if (c === BACKSLASH) i += 1;
    else if (c === QUOTE) break;
  }
  if (i + 1 >= end || i === open + 1 || chunk[i + 1] !== CLOSE_BRACE) return undefined;
  for (let k = i + 2; k < end; k += 1) {
    if (chunk[k] !== QUOTE) continue;
    const key = KEY_BY_LETTER[chunk[k + 1]!];
    if (key === undefined) continue;
    if (key === FINISH_KEY) {
      // `"finish_reason":` must be followed by `null`.
      if (bytesAt(chunk, k + 1, key, key.length - 4) && !(bytesAt(chunk, k + 1, key) && k + 1 + key.length <= end)) return undefined;
    } else if (bytesAt(chunk, k + 1, key) && k + 1 + key.length <= end) {
      return undefined;
    }
  }
  return [open, i + 1];
}

/** One request's stream translation (a fresh object per stream). */
export class MessagesStream implements StreamShape {
  private started = false;
  /** The open block: its kind (`thinking`, `text`, or the tool call's chat index) and block index. */
  private open: { kind: string | number; index: number } | undefined;
  private nextIndex = 0;
  /** Block index of each tool call by its chat `index`. */
  private readonly tools = new Map<number, number>();
  private finish: string | null = null;
  private matched: unknown;
  private usage: Usage | undefined;
  /** A tool call seen but not yet started: its name may still be arriving in fragments. */
  private pending: { key: number; id: string; name: string } | undefined;

  constructor(private readonly context: MessageContext) {}

  start(): string[] {
    return [];
  }

  frames(chunk: ChatCompletionChunk): string[] {
    const out: string[] = [];
    if (!this.started) this.begin(out, chunk.id);
    if (chunk.usage) this.usage = chunk.usage as Usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = (choice.delta ?? {}) as ChatCompletionChunk['choices'][number]['delta'] & { reasoning?: unknown };
    const reasoning = delta.reasoning_content ?? (typeof delta.reasoning === 'string' ? delta.reasoning : undefined);
    if (this.pending && (reasoning || delta.content)) this.startPending(out);
    if (reasoning) {
      this.ensure(out, 'thinking', { type: 'thinking', thinking: '', signature: '' });
      out.push(blockDelta(this.open!.index, 'thinking_delta', 'thinking', reasoning));
    }
    if (delta.content) {
      this.ensure(out, 'text', { type: 'text', text: '' });
      out.push(blockDelta(this.open!.index, 'text_delta', 'text', delta.content));
    }
    if (delta.tool_calls) for (const call of delta.tool_calls) this.toolCall(out, call);
    if (choice.finish_reason) {
      this.finish = choice.finish_reason;
      this.matched = (choice as { stop_reason?: unknown }).stop_reason;
    }
    return out;
  }

  done(): string[] {
    const out: string[] = [];
    if (!this.started) this.begin(out, undefined);
    this.startPending(out);
    this.close(out);
    const stop = stopInfo(this.finish, this.matched, this.context.stopSequences, this.tools.size > 0);
    out.push(`event: message_delta\ndata: {"type":"message_delta","delta":${JSON.stringify(stop)},"usage":${JSON.stringify(messagesUsage(this.usage))}}\n\n`);
    out.push(MESSAGE_STOP);
    return out;
  }

  error(message: string): string {
    return messagesErrorEvent(message);
  }

  /**
   * The fast path of the common chunk, a text delta continuing the open text block: its content's
   * JSON string literal is copied into the `text_delta` frame as it is (both are JSON strings), with
   * no parse. Anything else (the first chunk, another block kind, tool calls, reasoning, a finish
   * reason, a second choice, an empty or unusual delta) answers `undefined` and is parsed.
   */
  plain(data: string): string | undefined {
    if (this.open?.kind !== 'text' || this.pending) return undefined;
    const literal = plainContentLiteral(data);
    return literal === undefined ? undefined : textDeltaFrame(this.open.index, literal);
  }

  /**
   * {@link plain} on the upstream's bytes: the literal is copied into `out` between two constant
   * pieces. An upstream writes its token chunks alike but for the literal, so the bytes around the
   * last accepted literal are kept: an event with the same bytes before and after its literal
   * passes the same checks, and is taken with two comparisons and a scan of the literal.
   */
  plainBytes(chunk: Buffer, start: number, end: number, out: FrameBytes): boolean {
    if (this.open?.kind !== 'text' || this.pending) return false;
    let from: number;
    let to: number;
    if (this.likeLast(chunk, start, end)) {
      from = this.litFrom;
      to = this.litTo;
    } else {
      const literal = plainContentBytes(chunk, start, end);
      if (literal === undefined) return false;
      [from, to] = literal;
      this.last = { before: Buffer.from(chunk.subarray(start, from)), after: Buffer.from(chunk.subarray(to, end)) };
    }
    const prefix = textDeltaPrefix(this.open.index);
    const buf = out.reserve(prefix.length + (to - from) + TEXT_DELTA_SUFFIX.length);
    let p = out.len;
    buf.set(prefix, p);
    p += prefix.length;
    for (let k = from; k < to; k += 1) buf[p++] = chunk[k]!;
    for (let k = 0; k < TEXT_DELTA_SUFFIX.length; k += 1) buf[p++] = TEXT_DELTA_SUFFIX[k]!;
    out.len = p;
    return true;
  }

  /** The bytes before and after the last accepted literal (copies: the upstream's buffer is not kept). */
  private last: { before: Buffer; after: Buffer } | undefined;
  /** The literal's range when {@link likeLast} answers true. */
  private litFrom = 0;
  private litTo = 0;

  private likeLast(chunk: Buffer, start: number, end: number): boolean {
    const last = this.last;
    if (last === undefined) return false;
    const open = start + last.before.length;
    if (open >= end || chunk.compare(last.before, 0, last.before.length, start, open) !== 0) return false;
    let i = open + 1;
    for (; i < end; i += 1) {
      const c = chunk[i];
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) break;
    }
    if (i >= end || i === open + 1 || end - (i + 1) !== last.after.length || !bytesAt(chunk, i + 1, last.after)) return false;
    this.litFrom = open;
    this.litTo = i + 1;
    return true;
  }

  private begin(out: string[], chatId: string | undefined): void {
    this.started = true;
    // JSON.stringify's text of { type, message: { id, type, role, model, content: [], stop_reason,
    // stop_sequence, usage } } with zero usage, as a template (one per stream).
    out.push(`event: message_start\ndata: {"type":"message_start","message":{"id":${JSON.stringify(messageId(chatId))},"type":"message","role":"assistant","model":${JSON.stringify(this.context.model)},"content":[],"stop_reason":null,"stop_sequence":null,"usage":${ZERO_USAGE}}}\n\n`);
    out.push(PING);
  }

  /** Makes a block of `kind` the open one (stopping another), starting it with `block`. */
  private ensure(out: string[], kind: string | number, block: Json): number {
    if (this.open?.kind === kind) return this.open.index;
    this.close(out);
    const index = this.nextIndex++;
    this.open = { kind, index };
    out.push(event('content_block_start', JSON.stringify({ type: 'content_block_start', index, content_block: block })));
    return index;
  }

  private close(out: string[]): void {
    if (!this.open) return;
    out.push(event('content_block_stop', `{"type":"content_block_stop","index":${this.open.index}}`));
    this.open = undefined;
  }

  private toolCall(out: string[], call: ToolCallDelta): void {
    const key = typeof call.index === 'number' ? call.index : 0;
    const name = call.function?.name;
    let index = this.tools.get(key);
    if (index === undefined) {
      if (this.pending?.key === key) {
        if (name) this.pending.name += name;
      } else {
        this.startPending(out);
        this.pending = { key, id: call.id || `toolu_${this.nextIndex}`, name: name ?? '' };
      }
    }
    const args = call.function?.arguments;
    if (!args) return;
    index = this.tools.get(key) ?? this.startPending(out);
    out.push(blockDelta(index!, 'input_json_delta', 'partial_json', args));
  }

  /** Starts the pending tool call's block; its block index, or `undefined` when none is pending. */
  private startPending(out: string[]): number | undefined {
    const call = this.pending;
    if (!call) return undefined;
    this.pending = undefined;
    const index = this.ensure(out, call.key, { type: 'tool_use', id: call.id, name: call.name, input: {} });
    this.tools.set(call.key, index);
    return index;
  }
}

/** A {@link StreamShape} factory for one messages request. */
export function messagesStream(context: MessageContext): () => StreamShape {
  return () => new MessagesStream(context);
}
