/**
 * The price of one request from its route's `pricing` (USD per 1M tokens for `prompt`,
 * `completion`, `input_cache_reads` and `input_cache_writes`; `request` USD per request; `image`
 * USD per image; values are strings), resolved for the request's time through the route's
 * `pricing_schedule`, and the usage the upstream reported. Used by the request log at flush time,
 * by the daily quota and by the routewise quota ledger. Pure; allocates nothing.
 */
import { pricingAt } from '../registry/pricing-schedule';
import type { Pricing } from '../registry/types';
import type { Usage } from '../surfaces/usage';

const PER_TOKEN = 1 / 1_000_000;

/** When the request happened and what it carried besides tokens. */
export interface PricedRequest {
  /** Epoch milliseconds the schedule is read at (the request log uses the response's close). */
  readonly at: number;
  /** Images sent in the request (counted from `image_url` content parts); absent: 0. */
  readonly images?: number | undefined;
}

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

/** Prompt tokens written to the provider's cache (`cache_write_tokens` or `cache_creation_input_tokens`). */
export function cacheWriteTokens(usage: Usage | undefined): number {
  if (!usage) return 0;
  return count(usage.cache_write_tokens ?? usage.cache_creation_input_tokens);
}

/**
 * USD cost of a request, or null when the route has no usable price at `request.at`.
 * `prompt_tokens` includes cached reads and cache writes (OpenAI usage); each is charged at its own
 * rate when that rate is priced, the rest of the prompt at `prompt`. `request` is added once and
 * `image` once per image, even without usage (the caller only prices requests that reached an
 * upstream answer).
 */
export function costOf(pricing: Pricing | undefined, usage: Usage | undefined, request: PricedRequest): number | null {
  const p = pricingAt(pricing, request.at);
  if (!p) return null;
  const prompt = price(p.prompt);
  const completion = price(p.completion);
  const cacheReads = price(p.input_cache_reads);
  const cacheWrites = price(p.input_cache_writes);
  const perRequest = price(p.request);
  const perImage = price(p.image);
  if (prompt === undefined && completion === undefined && cacheReads === undefined && cacheWrites === undefined
    && perRequest === undefined && perImage === undefined) return null;
  const promptTokens = count(usage?.prompt_tokens);
  const cached = cacheReads === undefined ? 0 : Math.min(cachedPromptTokens(usage), promptTokens);
  const written = cacheWrites === undefined ? 0 : Math.min(cacheWriteTokens(usage), promptTokens - cached);
  let usd = (perRequest ?? 0) + count(request.images) * (perImage ?? 0);
  usd += (promptTokens - cached - written) * (prompt ?? 0) * PER_TOKEN;
  usd += cached * (cacheReads ?? 0) * PER_TOKEN + written * (cacheWrites ?? 0) * PER_TOKEN;
  usd += count(usage?.completion_tokens) * (completion ?? 0) * PER_TOKEN;
  return Math.round(usd * 1e9) / 1e9;
}
