/**
 * Prompt-size estimate: 4 bytes of UTF-8 text per token, 85 tokens per image, 200 per
 * audio input; and the priority tier it puts a request in.
 */
import type { PriorityTier } from '../adapters';

export interface TierThresholds {
  largeTokens: number;
  elephantTokens: number;
}

function partTokens(part: unknown): number {
  if (typeof part === 'string') return Buffer.byteLength(part, 'utf8') / 4;
  if (part === null || typeof part !== 'object') return 0;
  const p = part as { type?: unknown; text?: unknown };
  if (p.type === 'image_url' || p.type === 'image' || p.type === 'input_image') return 85;
  if (p.type === 'input_audio' || p.type === 'audio') return 200;
  return typeof p.text === 'string' ? Buffer.byteLength(p.text, 'utf8') / 4 : 0;
}

/** Estimated prompt tokens of a chat `messages` list (text, images, audio; tool-call arguments as text). */
export function estimatePromptTokens(messages: readonly unknown[]): number {
  let tokens = 0;
  for (const message of messages) {
    const m = message as { content?: unknown; tool_calls?: unknown };
    if (Array.isArray(m.content)) for (const part of m.content) tokens += partTokens(part);
    else tokens += partTokens(m.content);
    if (Array.isArray(m.tool_calls)) tokens += Buffer.byteLength(JSON.stringify(m.tool_calls), 'utf8') / 4;
  }
  return Math.ceil(tokens);
}

/** `interactive` below the large threshold, `large` up to the elephant threshold, then `elephant`. */
export function priorityTier(estimatedTokens: number, thresholds: TierThresholds): PriorityTier {
  if (estimatedTokens >= thresholds.elephantTokens) return 'elephant';
  if (estimatedTokens >= thresholds.largeTokens) return 'large';
  return 'interactive';
}
