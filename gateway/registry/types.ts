/**
 * The loaded model registry: models by public id and alias, each with its resolved routes.
 * Immutable once built; a reload builds a new one.
 */

import { ROLES, type Role } from '../../lib/identity/roles';
import type { ProcessorName } from '../processors';
import type { PricingSchedule } from './pricing-schedule';

/** Account roles belong to identity (lib/identity/roles.ts); models name them in `required_role`. */
export { ROLES, type Role };

export type ModelType = 'chat' | 'embedding';

/**
 * The API a route's upstream speaks for chat (docs/adapters.md "Responses-API upstreams"):
 * `chat_completions` (every kind's default), or `responses` (a compat-family upstream serving
 * `POST /v1/responses`, which then serves only the gateway's `/v1/responses`).
 */
export type UpstreamApi = 'chat_completions' | 'responses';

/** Pricing in USD (strings, as configured): per 1M tokens, per request, per image. */
export interface Pricing {
  prompt?: string;
  completion?: string;
  input_cache_reads?: string;
  input_cache_writes?: string;
  request?: string;
  image?: string;
  /** `pricing_schedule` compiled over these base fields (resolve with `pricingAt`). */
  schedule?: PricingSchedule;
}

/** One way to serve a model (a route entry), with every inherited model field resolved. */
export interface Route {
  /** Stable identity for breaker, latency history, affinity and weight overrides; label-independent. */
  endpointId: string;
  /** `<model id>#<index in the route list>`; stable while the route list keeps its order. */
  routeId: string;
  /** Adapter kind, e.g. `engine_a` or `aggregator[some-slug]`. */
  kind: string;
  /** Analytics label: the route's `provider`, else the kind. Never selects an adapter. */
  providerLabel: string;
  providerDisplayName: string | undefined;
  providerType: 'on_demand' | 'quota' | 'concurrency' | undefined;
  baseUrl: string;
  /** No key, one key, or a pool (one endpoint). */
  apiKeys: readonly string[];
  providerModelId: string;
  weight: number;
  /** `undefined`: the default embeddings path. */
  embeddingsPath: string | undefined;
  contextLength: number;
  maxOutputLength: number;
  supportsTools: boolean;
  supportsStructuredOutput: boolean;
  supportedParams: readonly string[];
  reasoningEfforts: readonly string[];
  onDemand: boolean;
  processor: ProcessorName;
  extraBody: Readonly<Record<string, unknown>> | undefined;
  priorityScheduling: boolean;
  nullCacheDetailsMeansMiss: boolean;
  upstreamApi: UpstreamApi;
  quantization: string;
  inputModalities: readonly string[];
  outputModalities: readonly string[];
  routeMetadata: Readonly<Record<string, unknown>>;
  pricing: Pricing | undefined;
  /** Pool/budget metadata for the cost-aware strategy, kept as configured. */
  costMetadata: Readonly<Record<string, unknown>>;
}

export interface Model {
  id: string;
  name: string;
  aliases: readonly string[];
  modelType: ModelType;
  /** Strategy name; `undefined` means the routing file's `default_router`. */
  router: string | undefined;
  routerParams: Readonly<Record<string, unknown>>;
  requiredRole: Role | undefined;
  /** True when any route is on-demand (a route inherits the model's `on_demand`). */
  onDemand: boolean;
  contextLength: number;
  maxOutputLength: number;
  routes: readonly Route[];
  /** Registry key `demo: true`: a scripted stand-in (docs/demo-model.md), listed with `demo: true`. */
  demo?: boolean;
  /**
   * Set by the runtime overlay when some provider keys are reserved for a minimum role: the
   * model as a caller of each role sees it (key pools without the keys reserved above that role,
   * routes whose pool would be empty removed). Absent: every role uses `routes`.
   */
  byRole?: ReadonlyMap<Role, Model>;
}

export interface Registry {
  /** The file the models came from (or would have, when missing). */
  source: string;
  models: readonly Model[];
  /** Public id or alias → model (aliases resolve to the model loaded last). */
  byName: ReadonlyMap<string, Model>;
  /** One per model id plus one per alias (`routes_configured` of `/health`). */
  routesConfigured: number;
}
