/**
 * Minimal OpenAI chat-completions shapes used by the output processors. Only the fields the
 * processors read or write are typed; upstream bodies may carry more (they are preserved because
 * processors copy or mutate the objects they are given).
 */

/** A complete function call, as in `message.tool_calls`. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A streamed tool call fragment, as in `delta.tool_calls`. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** Fields shared by a complete message and a streamed delta. */
interface MessageFields {
  role?: string;
  content?: string | null;
  reasoning_content?: string | null;
}

/** The assistant message of a non-streaming choice. */
export interface ChatMessage extends MessageFields {
  tool_calls?: ToolCall[];
}

/** The delta of a streamed choice. */
export interface ChatDelta extends MessageFields {
  tool_calls?: ToolCallDelta[];
}

/** Token accounting sent by the upstream. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One choice of a `chat.completion` body. */
export interface ChatChoice {
  index: number;
  message: ChatMessage;
  finish_reason: string | null;
  logprobs?: unknown;
}

/** One choice of a `chat.completion.chunk`. */
export interface ChunkChoice {
  index: number;
  delta: ChatDelta;
  finish_reason: string | null;
  logprobs?: unknown;
}

/** A non-streaming chat completion body. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage?: Usage | null;
  system_fingerprint?: string | null;
}

/** One streamed chat completion chunk (one SSE `data:` event). */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChunkChoice[];
  usage?: Usage | null;
  system_fingerprint?: string | null;
}
