/**
 * Streaming processing: one parser per choice, fed with each chunk's `delta.content`.
 */
import { toToolCall, toolCallId } from './assemble';
import { type Part, type TextParser } from './text';
import { type ChatCompletionChunk, type ChatDelta, type ChunkChoice, type ToolCallDelta } from './types';

/**
 * A stateful processor for one streamed response. The array returned by `push` or `finish` may be
 * reused by the next call: consume it before calling again.
 */
export interface StreamProcessor {
  /** Takes one upstream chunk; returns the chunks to forward now (possibly none). */
  push(chunk: ChatCompletionChunk): ChatCompletionChunk[];
  /** Ends the stream; returns chunks holding any text still held back (send before `[DONE]`). */
  finish(): ChatCompletionChunk[];
}

/** Forwards every chunk as is, allocating nothing per chunk. */
export class PassThroughStream implements StreamProcessor {
  private readonly one: ChatCompletionChunk[] = [];
  private readonly none: ChatCompletionChunk[] = [];

  /** @inheritdoc */
  push(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    this.one[0] = chunk;
    this.one.length = 1;
    return this.one;
  }

  /** @inheritdoc */
  finish(): ChatCompletionChunk[] {
    this.none.length = 0;
    return this.none;
  }
}

interface ChoiceState {
  parser: TextParser;
  /** Index for the next tool call of this choice (after any the upstream sent itself). */
  nextTool: number;
  /** Tool calls this processor emitted for the choice. */
  emitted: number;
  /** The choice finished (its parser is flushed); later deltas pass through. */
  done: boolean;
}

const EMPTY_DELTA: ChatDelta = {};

/**
 * Runs each choice's content through a parser. Unchanged choices keep their object; a chunk
 * whose text is all held back (and carries nothing else) is dropped. On a choice's finishing
 * chunk the parser is flushed into that chunk and, if calls were emitted, `finish_reason` is
 * `tool_calls`.
 */
export class ParsingStream implements StreamProcessor {
  private readonly states = new Map<number, ChoiceState>();
  private readonly parts: Part[] = [];
  private last: ChatCompletionChunk | undefined;

  constructor(private readonly makeParser: () => TextParser) {}

  /** @inheritdoc */
  push(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
    this.last = chunk;
    let choices: ChunkChoice[] | undefined;
    let payload = false;
    let i = 0;
    for (const choice of chunk.choices) {
      const next = this.processChoice(choice, chunk.id);
      if (next !== choice) choices ??= chunk.choices.slice(0, i);
      choices?.push(next);
      payload ||= next === choice || hasPayload(next);
      i += 1;
    }
    if (choices === undefined) return [chunk];
    if (!payload && chunk.usage == null) return [];
    return [{ ...chunk, choices }];
  }

  /** @inheritdoc */
  finish(): ChatCompletionChunk[] {
    const out: ChatCompletionChunk[] = [];
    const last = this.last;
    if (last === undefined) return out;
    for (const [index, state] of this.states) {
      if (state.done) continue;
      state.done = true;
      const parts: Part[] = [];
      state.parser.finish(parts);
      if (parts.length === 0) continue;
      const delta = this.buildDelta(EMPTY_DELTA, parts, state, last.id, index);
      const { id, created, model } = last;
      out.push({ id, object: 'chat.completion.chunk', created, model, choices: [{ index, delta, finish_reason: null }] });
    }
    return out;
  }

  private processChoice(choice: ChunkChoice, id: string): ChunkChoice {
    const state = this.stateFor(choice.index);
    if (state.done) return choice;
    const delta = choice.delta ?? EMPTY_DELTA;
    trackUpstreamCalls(state, delta.tool_calls);
    const parts = this.parts;
    parts.length = 0;
    const text = delta.content;
    if (typeof text === 'string' && text !== '') state.parser.push(text, parts);
    const finishing = choice.finish_reason != null;
    if (finishing) {
      state.parser.finish(parts);
      state.done = true;
    }
    const finishesWithCalls = finishing && state.emitted > 0 && choice.finish_reason !== 'tool_calls';
    if (isUnchanged(parts, text) && !finishesWithCalls) return choice;
    // buildDelta counts the calls it emits, so the finish reason is decided after it.
    const built = this.buildDelta(delta, parts, state, id, choice.index);
    return { ...choice, delta: built, finish_reason: finishing && state.emitted > 0 ? 'tool_calls' : choice.finish_reason };
  }

  private buildDelta(delta: ChatDelta, parts: readonly Part[], state: ChoiceState, id: string, choiceIndex: number): ChatDelta {
    const { content: _content, reasoning_content: upstreamReasoning, tool_calls: upstreamCalls, ...out } = delta;
    let content = '';
    let reasoning = upstreamReasoning ?? '';
    const calls: ToolCallDelta[] = upstreamCalls ? [...upstreamCalls] : [];
    for (const part of parts) {
      if (part.kind === 'content') content += part.text;
      else if (part.kind === 'reasoning') reasoning += part.text;
      else {
        const index = state.nextTool;
        calls.push({ index, ...toToolCall(part.call, toolCallId(id, choiceIndex, index)) });
        state.nextTool += 1;
        state.emitted += 1;
      }
    }
    const result: ChatDelta = out;
    if (content !== '') result.content = content;
    if (reasoning !== '') result.reasoning_content = reasoning;
    if (calls.length > 0) result.tool_calls = calls;
    return result;
  }

  private stateFor(index: number): ChoiceState {
    let state = this.states.get(index);
    if (state === undefined) {
      state = { parser: this.makeParser(), nextTool: 0, emitted: 0, done: false };
      this.states.set(index, state);
    }
    return state;
  }
}

/** Whether the parts are exactly the delta's text (nothing held back, nothing extracted). */
function isUnchanged(parts: readonly Part[], text: string | null | undefined): boolean {
  if (parts.length === 0) return text === undefined || text === null || text === '';
  const [only] = parts;
  return parts.length === 1 && only?.kind === 'content' && only.text === text;
}

/** Keeps our call indexes after any the upstream assigned itself. */
function trackUpstreamCalls(state: ChoiceState, calls: readonly ToolCallDelta[] | undefined): void {
  if (calls === undefined) return;
  for (const call of calls) if (call.index >= state.nextTool) state.nextTool = call.index + 1;
}

/** Whether a rewritten choice still carries anything worth sending. */
function hasPayload(choice: ChunkChoice): boolean {
  if (choice.finish_reason != null || choice.logprobs != null) return true;
  return Object.values(choice.delta).some((value) => value !== undefined && value !== null);
}
