/**
 * The local `count_tokens` estimate (docs/inference-surfaces.md "Messages surface"): the gateway's
 * prompt estimator (4 bytes of UTF-8 per token, 85 per image) over the translated chat messages,
 * plus the tools' JSON at the same rate and a few tokens of framing per message. Measured against
 * a real tokenizer on plain English text in test/unit/gateway/messages-count-tokens.test.ts.
 */
import { estimatePromptTokens } from '../../routing/prompt-estimate';

/** Tokens of framing (role markers, separators) counted for each message. */
export const PER_MESSAGE_TOKENS = 3;

/** Estimated input tokens of a translated messages request (its chat body). */
export function estimateInputTokens(chat: { messages: readonly unknown[]; tools?: unknown }): number {
  let tokens = estimatePromptTokens(chat.messages) + PER_MESSAGE_TOKENS * chat.messages.length;
  if (Array.isArray(chat.tools) && chat.tools.length > 0) tokens += Math.ceil(Buffer.byteLength(JSON.stringify(chat.tools), 'utf8') / 4);
  return Math.max(1, tokens);
}
