/**
 * Usage as the gateway reports it: `prompt_tokens_details.cached_tokens` when the
 * upstream reported it (a null details object means a miss only on routes declaring
 * `null_cache_details_means_miss`); non-streaming responses add `cache_read_tokens`; the final
 * stream chunk adds `cached_tokens` beside `prompt_tokens_details`.
 */
import type { Route } from '../registry';

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  cached_tokens?: number | null;
  cache_read_tokens?: number | null;
  [key: string]: unknown;
}

/** Cached prompt tokens as reported, `null` when unknown. Normalizes `prompt_tokens_details` in place. */
export function cachedTokens(usage: Usage, route: Route): number | null {
  const details = usage.prompt_tokens_details;
  if (details && typeof details.cached_tokens === 'number') return details.cached_tokens;
  if (details === null && route.nullCacheDetailsMeansMiss) {
    usage.prompt_tokens_details = { cached_tokens: 0 };
    return 0;
  }
  return null;
}

/** Adds `cache_read_tokens` (non-streaming). */
export function finishCompletionUsage(usage: Usage | undefined, route: Route): void {
  if (!usage || typeof usage !== 'object') return;
  usage.cache_read_tokens = cachedTokens(usage, route);
}

/** Adds `cached_tokens` and makes sure `prompt_tokens_details` is present (final stream chunk). */
export function finishStreamUsage(usage: Usage, route: Route): void {
  const cached = cachedTokens(usage, route);
  usage.cached_tokens = cached;
  if (usage.prompt_tokens_details === undefined || usage.prompt_tokens_details === null) {
    usage.prompt_tokens_details = cached === null ? null : { cached_tokens: cached };
  }
}
