/**
 * The price of one request from its route's `pricing` (spec 2.1: USD per 1M tokens for `prompt`,
 * `completion` and `input_cache_reads`; `request` USD per request; values are strings) and the
 * usage the upstream reported. Used by the request log at flush time and by the daily quota.
 */
import type { Pricing } from '../registry/types';
import type { Usage } from '../surfaces/usage';

const PER_TOKEN = 1 / 1_000_000;

/** A configured price as a number; absent, empty or non-numeric values count as not configured. */
function price(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** Cached prompt tokens as reported in any of the gateway's usage spellings (0 when unknown). */
export function cachedPromptTokens(usage: Usage | undefined): number {
  if (!usage) return 0;
  if (typeof usage.cache_read_tokens === 'number') return count(usage.cache_read_tokens);
  if (typeof usage.cached_tokens === 'number') return count(usage.cached_tokens);
  return count(usage.prompt_tokens_details?.cached_tokens);
}

/**
 * USD cost of a request, or null when the route has no usable price. `prompt_tokens` includes
 * the cached ones (OpenAI usage); when `input_cache_reads` is priced, cached tokens are charged at
 * that rate and only the rest at `prompt`, otherwise every prompt token is charged at `prompt`.
 * `request` is added once per request, even without usage (a failed request costs nothing: the
 * caller only prices requests that reached an upstream answer).
 */
export function costOf(pricing: Pricing | undefined, usage: Usage | undefined): number | null {
  if (!pricing) return null;
  const prompt = price(pricing.prompt);
  const completion = price(pricing.completion);
  const cacheReads = price(pricing.input_cache_reads);
  const perRequest = price(pricing.request);
  if (prompt === undefined && completion === undefined && cacheReads === undefined && perRequest === undefined) return null;
  const promptTokens = count(usage?.prompt_tokens);
  const cached = Math.min(cachedPromptTokens(usage), promptTokens);
  let usd = perRequest ?? 0;
  if (cacheReads !== undefined) {
    usd += (promptTokens - cached) * (prompt ?? 0) * PER_TOKEN + cached * cacheReads * PER_TOKEN;
  } else {
    usd += promptTokens * (prompt ?? 0) * PER_TOKEN;
  }
  usd += count(usage?.completion_tokens) * (completion ?? 0) * PER_TOKEN;
  return Math.round(usd * 1e9) / 1e9;
}
