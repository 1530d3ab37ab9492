/**
 * Non-streaming processing: each choice's content is run through a fresh parser in one piece.
 */
import { collect, toToolCall, toolCallId } from './assemble';
import { type Part, type TextParser } from './text';
import { type ChatChoice, type ChatCompletion } from './types';

/** Rewrites every choice of `body` in place with parsers from `makeParser`; returns `body`. */
export function processCompletionWith(makeParser: () => TextParser, body: ChatCompletion): ChatCompletion {
  if (!Array.isArray(body.choices)) return body;
  for (const choice of body.choices) processChoice(makeParser(), choice, body.id);
  return body;
}

function processChoice(parser: TextParser, choice: ChatChoice, completionId: string): void {
  const message = choice.message;
  if (typeof message?.content !== 'string' || message.content === '') return;
  const parts: Part[] = [];
  parser.push(message.content, parts);
  parser.finish(parts);
  const { content, reasoning, calls } = collect(parts);
  message.content = content;
  if (reasoning !== '') message.reasoning_content = (message.reasoning_content ?? '') + reasoning;
  if (calls.length === 0) return;
  const existing = message.tool_calls ?? [];
  const added = calls.map((call, i) => toToolCall(call, toolCallId(completionId, choice.index, existing.length + i)));
  message.tool_calls = [...existing, ...added];
  if (content === '') message.content = null;
  choice.finish_reason = 'tool_calls';
}
