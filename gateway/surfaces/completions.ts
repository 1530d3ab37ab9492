/**
 * `POST /v1/completions` on the chat path: the prompt becomes one user message, the
 * request runs through the same routing and fallback as chat, and results come back in the
 * legacy `text_completion` shape (streaming and not).
 */
import { AppError } from '../../lib/errors';
import { readJsonBody } from '../../lib/http/json-body';
import { callerOf } from '../auth/caller';
import type { ChatCompletion, ChatCompletionChunk } from '../processors/types';
import { sseEvent } from '../sse/sse-splitter';
import { serveChat, type SurfaceShape } from './chat';
import { FORWARDED_TEXT, parseChatRequest } from './chat-request';
import type { GatewayContextDeps, InferenceHandler } from './state';

/** Builds the chat body: `prompt` (a string, or a list of exactly one string) → one user message. */
export function completionsToChat(raw: unknown): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new AppError('invalid_request', 'Request body must be a JSON object');
  const { prompt, ...rest } = raw as Record<string, unknown>;
  const text: unknown = Array.isArray(prompt) && prompt.length === 1 ? (prompt as unknown[])[0] : prompt;
  if (typeof text !== 'string') {
    throw new AppError('invalid_request', "Invalid field 'prompt': must be a string (or a list of one string)", { param: 'prompt' });
  }
  return { ...rest, messages: [{ role: 'user', content: text }] };
}

function textChoice(index: number, text: string, finish: string | null) {
  return { index, text, logprobs: null, finish_reason: finish };
}

export const completionsShape: SurfaceShape = {
  completion: (body: ChatCompletion) => ({
    id: body.id, object: 'text_completion', created: body.created, model: body.model,
    choices: body.choices.map((c) => textChoice(c.index, c.message.content ?? '', c.finish_reason)),
    usage: body.usage,
  }),
  stream: () => ({
    start: () => [],
    frames: (chunk: ChatCompletionChunk) => [sseEvent(JSON.stringify({
      id: chunk.id, object: 'text_completion', created: chunk.created, model: chunk.model,
      choices: chunk.choices.map((c) => textChoice(c.index, c.delta.content ?? '', c.finish_reason)),
      ...(chunk.usage ? { usage: chunk.usage } : {}),
    }))],
    done: () => [sseEvent('[DONE]')],
  }),
};

/** `POST /v1/completions`. */
export function completionsHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const request = parseChatRequest(completionsToChat(await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT)));
    await serveChat(ctx, deps, request, caller.role, completionsShape);
  };
}
