/**
 * Stored runtime state (docs/runtime-config.md) as read from PostgreSQL, and the `site_settings` keys the
 * runtime configuration owns. Rows carry secrets (`api_key`); only {@link keyView} shapes leave
 * the process, so a secret never reaches a response or a log line.
 */
import type { Role } from '../registry/types';

/** `site_settings` keys (and key prefixes) owned by the runtime configuration. */
export const SETTING = {
  /** Bumped by every admin change; other processes poll it (cheap change marker). */
  revision: 'runtime_config_revision',
  /** `runtime_model:<model_id>` → {@link RuntimeModelRecord}. */
  runtimeModel: 'runtime_model:',
  /** `model_router:<model_id>` → strategy name override. */
  router: 'model_router:',
  /** `model_required_role:<model_id>` → baseline required role of a runtime model. */
  requiredRole: 'model_required_role:',
  /** `model_offload_route:<model_id>` → {@link OffloadPolicy}. */
  offload: 'model_offload_route:',
  /** Cost-aware (routewise) strategy settings per model. */
  routewise: 'routewise_model_settings',
} as const;

export interface ProviderDefinitionRow {
  slug: string;
  display_name: string;
  kind: string;
  base_url: string;
  api_key: string | null;
  api_key_fingerprint: string | null;
}

export interface ProviderKeyRow {
  id: string;
  provider: string;
  label: string | null;
  api_key: string;
  key_prefix: string;
  fingerprint: string;
  min_role: Role | null;
  disabled_at: Date | null;
  created_at: Date;
}

export interface CandidateRow {
  id: string;
  model_id: string;
  provider: string | null;
  kind: string;
  base_url: string | null;
  api_key: string | null;
  api_key_fingerprint: string | null;
  provider_model_id: string | null;
  weight: number;
  settings: Record<string, unknown>;
}

/** What a retarget may change on a registry route; the route keeps its endpoint_id and route id. */
export interface RouteRetarget {
  kind?: string;
  base_url?: string;
  provider_model_id?: string;
  provider?: string;
}

export interface RouteConfigRow {
  model_id: string;
  route_id: string;
  config: RouteRetarget;
  api_key: string | null;
  api_key_fingerprint: string | null;
}

/** A runtime model's own fields (its routes are candidates). Catalog defaults: context 8192, output 4096, text in/out, no tools. */
export interface RuntimeModelRecord {
  name: string;
  context_length: number;
  max_output_length: number;
  input_modalities: string[];
  output_modalities: string[];
  supports_tools: boolean;
  pricing?: Record<string, string>;
  aliases?: string[];
}

/** Offload policy (docs/routing.md "Offload") as stored under `model_offload_route:<model_id>`. */
export interface OffloadPolicy {
  route_id: string;
  wait_seconds: number;
  engine_queue_limit?: number;
  max_input_tokens?: number;
}

/** Everything stored, read in one pass. */
export interface StoredState {
  revision: number;
  providers: ProviderDefinitionRow[];
  providerKeys: ProviderKeyRow[];
  disabledEnvKeys: Array<{ provider: string; fingerprint: string }>;
  envKeyMinRoles: Array<{ provider: string; fingerprint: string; min_role: Role }>;
  disabledProviders: Array<{ provider: string; reason: string | null }>;
  candidates: CandidateRow[];
  routeConfigs: RouteConfigRow[];
  weights: Array<{ model_id: string; endpoint_id: string; weight: number }>;
  visibility: Array<{ model_id: string; required_role: Role }>;
  exemptions: string[];
  /** `site_settings` rows under the keys of {@link SETTING}. */
  settings: Map<string, unknown>;
}

export function emptyStoredState(): StoredState {
  return {
    revision: 0, providers: [], providerKeys: [], disabledEnvKeys: [], envKeyMinRoles: [], disabledProviders: [], candidates: [],
    routeConfigs: [], weights: [], visibility: [], exemptions: [], settings: new Map(),
  };
}
