/**
 * Output processors: per-model rewriting of upstream chat completions (reasoning blocks and
 * textual tool calls into OpenAI fields), for whole bodies and for SSE chunk streams. Pure code,
 * no I/O. Behaviour and examples: docs/output-processors.md.
 */
import { processCompletionWith } from './completion';
import { ParsingStream, PassThroughStream, type StreamProcessor } from './stream';
import { PlainText, type TextParser } from './text';
import { ThinkSplitter } from './think';
import { ToolCallSplitter } from './tool-calls';
import { GLM_FORMAT, QWEN_CODER_FORMAT } from './tool-formats';
import { type ChatCompletion } from './types';

export type { StreamProcessor } from './stream';
export type {
  ChatChoice, ChatCompletion, ChatCompletionChunk, ChatDelta, ChatMessage, ChunkChoice, ToolCall, ToolCallDelta, Usage,
} from './types';

/** The value of a model's `processor` setting. */
export type ProcessorName = 'default' | 'think_block' | 'qwen_coder' | 'glm';

/** Every processor name, `default` first. */
export const PROCESSOR_NAMES: readonly ProcessorName[] = Object.freeze(['default', 'think_block', 'qwen_coder', 'glm']);

/** Whether `value` names a processor (for validating settings). */
export function isProcessorName(value: unknown): value is ProcessorName {
  return typeof value === 'string' && (PROCESSOR_NAMES as readonly string[]).includes(value);
}

/** Parser factories of the processors that rewrite text (`default` has none). */
const PARSERS: Record<Exclude<ProcessorName, 'default'>, () => TextParser> = {
  think_block: () => new ThinkSplitter(new PlainText()),
  qwen_coder: () => new ToolCallSplitter(QWEN_CODER_FORMAT),
  glm: () => new ThinkSplitter(new ToolCallSplitter(GLM_FORMAT)),
};

/**
 * Non-streaming: takes the parsed upstream JSON body (OpenAI `chat.completion`) and returns the
 * transformed body. The body is mutated and returned; `default` returns it untouched.
 */
export function processCompletion(name: ProcessorName, body: ChatCompletion): ChatCompletion {
  return name === 'default' ? body : processCompletionWith(PARSERS[name], body);
}

/**
 * Streaming: a stateful processor for one response. `push()` takes each parsed
 * `chat.completion.chunk` and returns the chunks to forward; `finish()` returns chunks to flush at
 * the end of the stream (before `[DONE]`). `default` forwards every chunk unchanged.
 */
export function createStreamProcessor(name: ProcessorName): StreamProcessor {
  return name === 'default' ? new PassThroughStream() : new ParsingStream(PARSERS[name]);
}
