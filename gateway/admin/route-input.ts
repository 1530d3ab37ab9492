/**
 * Request bodies of runtime routes and runtime models (zod), and their translation into stored
 * `provider_route_candidates` rows. A route is built once before it is saved, so a body that could
 * not be applied is refused with a 400 naming the field instead of being stored.
 */
import { z } from 'zod';
import { BUILTIN_ADAPTER_KINDS, resolveAdapterKind } from '../adapters';
import { ROLES, type Role, type Route } from '../registry/types';
import { buildCandidate } from '../runtime-config/overlay';
import { keyFingerprint } from '../runtime-config/secrets';
import type { CandidateRow, ProviderDefinitionRow } from '../runtime-config/types';
import { invalid } from './http';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** Fields of a runtime route (all optional on PATCH). `api_key` is write-only: an empty string keeps the saved key. */
export const routeFields = z.object({
  provider: z.string().trim().min(1).max(64).optional(),
  kind: z.string().trim().min(1).optional(),
  base_url: httpUrl.optional(),
  api_key: z.string().optional(),
  provider_model_id: z.string().trim().min(1).optional(),
  weight: z.number().finite().min(0).optional(),
  context_length: z.number().int().positive().optional(),
  max_output_length: z.number().int().positive().optional(),
  supports_tools: z.boolean().optional(),
  pricing: z.record(z.string(), z.union([z.string(), z.number()]).transform(String)).optional(),
  /** `responses`: the upstream speaks the Responses API (docs/adapters.md "Responses-API upstreams"). */
  upstream_api: z.enum(['chat_completions', 'responses']).optional(),
}).strict();
export type RouteFields = z.infer<typeof routeFields>;

const roleSchema = z.enum(ROLES as [Role, ...Role[]]);

/** `POST /admin/routing/provider-route-models`: a runtime model and its first route. */
export const runtimeModelBody = z.object({
  id: z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/, 'letters, digits and . _ : / @ - (at most 128)'),
  name: z.string().trim().min(1).max(200).optional(),
  route: routeFields,
  pricing: z.record(z.string(), z.union([z.string(), z.number()]).transform(String)).optional(),
  router: z.string().min(1).optional(),
  required_role: roleSchema.optional(),
  context_length: z.number().int().positive().optional(),
  max_output_length: z.number().int().positive().optional(),
  input_modalities: z.array(z.enum(['text', 'image', 'audio'])).min(1).optional(),
  output_modalities: z.array(z.string().min(1)).min(1).optional(),
  supports_tools: z.boolean().optional(),
}).strict();
export type RuntimeModelBody = z.infer<typeof runtimeModelBody>;

const LABEL = /^[a-z0-9_-]{1,64}$/;
const BUILTIN = new Set(BUILTIN_ADAPTER_KINDS);

/** The stored row for route fields (merged over `previous` on PATCH). Throws 400s naming the field. */
export function candidateRow(modelId: string, input: RouteFields, providers: ReadonlyMap<string, ProviderDefinitionRow>, previous?: CandidateRow): CandidateRow {
  const provider = input.provider ?? previous?.provider ?? null;
  const custom = provider ? providers.get(provider) : undefined;
  if (provider && !custom && !BUILTIN.has(provider) && !LABEL.test(provider)) {
    throw invalid('provider', 'a custom provider slug, a built-in kind, or a label of lowercase letters, digits, - and _');
  }
  const kind = input.kind ?? (input.provider !== undefined ? undefined : previous?.kind) ?? custom?.kind ?? (provider && BUILTIN.has(provider) ? provider : 'generic_compat');
  try {
    resolveAdapterKind(kind);
  } catch (err) {
    if ((err as Error).name === 'ValueError') throw invalid('kind', `unknown adapter kind '${kind}'`);
    throw err;
  }
  const baseUrl = input.base_url ?? previous?.base_url ?? null;
  if (!baseUrl && !custom) throw invalid('base_url', 'required (or name a custom provider that has one)');
  const key = input.api_key ? input.api_key : previous?.api_key ?? null;
  const { api_key: _key, provider: _p, kind: _k, base_url: _b, provider_model_id: _m, weight: _w, ...settings } = input;
  return {
    id: previous?.id ?? '0', model_id: modelId, provider, kind, base_url: baseUrl, api_key: key, api_key_fingerprint: key ? keyFingerprint(key) : null,
    provider_model_id: input.provider_model_id ?? previous?.provider_model_id ?? null, weight: input.weight ?? previous?.weight ?? 1,
    settings: { ...previous?.settings, ...settings },
  };
}

/** Builds the route of a row exactly as the overlay will (400 naming `route` when it cannot). */
export function trialRoute(row: CandidateRow, modelFields: Record<string, unknown>, providers: ReadonlyMap<string, ProviderDefinitionRow>): Route {
  const built = buildCandidate(row.model_id, modelFields, row, providers);
  if (typeof built === 'string') throw invalid('route', built);
  return built;
}

/** The columns to insert or update for a row (id excluded). */
export function rowColumns(row: CandidateRow): Record<string, unknown> {
  const { id: _id, settings, ...columns } = row;
  return { ...columns, settings: JSON.stringify(settings) };
}
