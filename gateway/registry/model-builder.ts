/**
 * Builds one {@link Model} from a raw models-file entry (docs/registry.md: fields, route
 * inheritance, `${VAR}` skips, labels, embeddings paths). Outcomes: a model; a skip (unset
 * `${VAR}`), logged by the caller; a {@link RegistryStopError} (bad route label: loading stops
 * here); a {@link RegistryConfigError} (startup stops).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_SUPPORTED_PARAMS, type AdapterFamily } from '../adapters';
import { PROCESSOR_NAMES, type ProcessorName } from '../processors';
import { validateEmbeddingsPath } from './embeddings-path';
import { RegistryConfigError, RegistryStopError } from './errors';
import { expandWhole } from './expand';
import { compileSchedule, pricingScheduleSchema } from './pricing-schedule';
import { ROLES, type Model, type Route } from './types';

type Env = Readonly<Record<string, string | undefined>>;

/** Fields a model and a route share (the route's value wins). */
const inheritable = {
  base_url: z.string().optional(),
  api_key: z.string().optional(),
  api_keys: z.array(z.string()).min(1).optional(),
  provider_model_id: z.string().optional(),
  quantization: z.string().optional(),
  input_modalities: z.array(z.enum(['text', 'image', 'audio'])).optional(),
  output_modalities: z.array(z.string()).optional(),
  context_length: z.number().int().positive().optional(),
  max_output_length: z.number().int().positive().optional(),
  supports_tools: z.boolean().optional(),
  supports_structured_output: z.boolean().optional(),
  supported_params: z.array(z.string()).optional(),
  reasoning_efforts: z.array(z.string()).optional(),
  on_demand: z.boolean().optional(),
  processor: z.enum(PROCESSOR_NAMES as [ProcessorName, ...ProcessorName[]]).optional(),
  extra_body: z.record(z.string(), z.unknown()).optional(),
  priority_scheduling: z.boolean().optional(),
  // `responses`: the upstream speaks the Responses API; only `/v1/responses` uses the route (docs/adapters.md).
  upstream_api: z.enum(['chat_completions', 'responses']).optional(),
  route_metadata: z.record(z.string(), z.unknown()).optional(),
  // `schedule` is where the compiled pricing_schedule lives on a route's pricing: never a price key.
  pricing: z.record(z.string(), z.union([z.string(), z.number()]).transform(String))
    .refine((p) => !('schedule' in p), "'schedule' is not a price; time-dependent prices go under pricing_schedule").optional(),
  pricing_schedule: pricingScheduleSchema.optional(),
};

const routeSchema = z.object({
  ...inheritable,
  kind: z.string().min(1).optional(),
  weight: z.number().min(0).optional(),
  optional: z.boolean().optional(),
  provider: z.string().optional(),
  provider_display_name: z.string().optional(),
  provider_type: z.enum(['on_demand', 'quota', 'concurrency']).optional(),
  routewise_pool: z.string().optional(),
  quota_pool: z.string().optional(),
  concurrency_pool: z.string().optional(),
  quota_source: z.object({
    provider: z.string().min(1).optional(),
    usage_label: z.string().min(1).optional(),
    unit: z.enum(['requests', 'tokens', 'prompt_tokens', 'completion_tokens', 'usd']).optional(),
  }).strict().optional(),
  quota: z.object({ limit: z.number() }).loose().optional(),
  concurrency: z.object({ limit: z.number() }).loose().optional(),
});

const modelSchema = z.object({
  ...inheritable,
  id: z.string().trim().min(1),
  name: z.string().min(1),
  provider: z.string().min(1).optional(),
  model_type: z.enum(['chat', 'embedding']).optional(),
  type: z.enum(['chat', 'embedding']).optional(),
  aliases: z.array(z.string().trim().min(1)).optional(),
  router: z.string().optional(),
  router_params: z.record(z.string(), z.unknown()).optional(),
  required_role: z.enum(ROLES as [string, ...string[]]).optional(),
  admin_only: z.boolean().optional(),
  // A scripted stand-in, not a real model: `/v1/models` marks it `demo: true` (docs/demo-model.md).
  demo: z.boolean().optional(),
  route: z.array(z.record(z.string(), z.unknown())).min(1).optional(),
});

type RawRoute = z.infer<typeof routeSchema>;

export interface BuildContext {
  file: string;
  env: Env;
  /** The adapter family of a kind; throws for an unknown kind (extension kinds checked first). */
  resolveKind: (kind: string) => AdapterFamily;
  /** Built-in provider names a route label may not take. */
  reservedLabels: ReadonlySet<string>;
  /** Strategy name → accepted `router_params` keys. */
  strategies: ReadonlyMap<string, ReadonlySet<string>>;
  /** Strategies whose implementation is installed. */
  availableStrategies: ReadonlySet<string>;
  /** Routes skipped with `optional: true` are reported here. */
  warn: (message: string, fields: Record<string, unknown>) => void;
}

export type BuildOutcome = { model: Model } | { skipped: string; variable: string };

/** `router_params` keys that moved to routes, and what replaces them (refused at boot). */
const REMOVED_ROUTER_PARAMS: Readonly<Record<string, string>> = {
  quota: "route-level 'quota: {limit: N}'",
  quota_limit: "route-level 'quota: {limit: N}'",
  concurrency: "route-level 'concurrency: {limit: N}'",
  concurrency_limit: "route-level 'concurrency: {limit: N}'",
  quota_pool: "route-level 'quota_pool'",
  concurrency_pool: "route-level 'concurrency_pool'",
  quota_source: "route-level 'quota_source'",
};

const LABEL = /^[a-z0-9_-]{1,64}$/;

/** Control flow for an unset `${VAR}`: skips the model, or only the route when it is optional. */
class Skip extends Error {
  constructor(readonly variable: string, readonly field: string) {
    super(`${variable} (${field}) is unset or blank`);
    this.name = 'Skip';
  }
}

function parse<T extends z.ZodType>(schema: T, raw: unknown, where: string): z.infer<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new RegistryConfigError(`${where}: invalid '${issue.path.join('.') || '(entry)'}': ${issue.message}`);
}

function expandOrSkip(value: string, field: string, env: Env): string {
  const expanded = expandWhole(value, env);
  if (!expanded.ok) throw new Skip(expanded.variable, field);
  return expanded.value;
}

function checkRouter(model: z.infer<typeof modelSchema>, where: string, ctx: BuildContext): void {
  if (model.router !== undefined) {
    const accepted = ctx.strategies.get(model.router);
    if (!accepted) {
      throw new RegistryConfigError(`${where}: unknown router '${model.router}'; known strategies: ${[...ctx.strategies.keys()].join(', ')}`);
    }
    if (!ctx.availableStrategies.has(model.router)) {
      throw new RegistryConfigError(`${where}: router '${model.router}' (cost-aware) is selected but its package is not installed`);
    }
  }
  const accepted = ctx.strategies.get(model.router ?? 'fixed') ?? new Set<string>();
  for (const key of Object.keys(model.router_params ?? {})) {
    const replacement = REMOVED_ROUTER_PARAMS[key];
    if (replacement) throw new RegistryConfigError(`${where}: router_params.${key} is no longer supported; use ${replacement} instead`);
    if (!accepted.has(key)) throw new RegistryConfigError(`${where}: unknown router_params key '${key}' (accepted: ${[...accepted].join(', ') || 'none'})`);
  }
}

/** Stable id from what selects the upstream, never from the label (a label change keeps breaker, latency history and weight overrides). */
function endpointIdFor(modelId: string, kind: string, baseUrl: string, providerModelId: string, occurrence: number): string {
  const digest = createHash('sha256').update(`${modelId}\n${kind}\n${baseUrl.replace(/\/+$/, '')}\n${providerModelId}\n${occurrence}`).digest('hex');
  return `ep_${digest.slice(0, 16)}`;
}

function buildRoute(model: z.infer<typeof modelSchema>, rawRoute: Record<string, unknown>, index: number, ctx: BuildContext, seen: Map<string, number>): Route | undefined {
  const where = `${ctx.file}: model '${model.id}' route ${index}`;
  if ('null_cache_details_means_miss' in rawRoute && typeof rawRoute.null_cache_details_means_miss !== 'boolean') {
    throw new RegistryConfigError(`${where}: null_cache_details_means_miss must be true or false, not ${JSON.stringify(rawRoute.null_cache_details_means_miss)}`);
  }
  const route: RawRoute = parse(routeSchema, rawRoute, where);
  const merged = { ...model, ...route };
  if (route.api_key !== undefined && route.api_keys !== undefined) {
    throw new RegistryConfigError(`${where}: set either api_key or api_keys, not both`);
  }
  const kind = route.kind ?? model.provider;
  if (!kind) throw new RegistryConfigError(`${where}: no adapter kind: set 'provider' on the model or 'kind' on the route`);
  const family = ctx.resolveKind(kind);
  if (merged.upstream_api === 'responses' && family !== 'compat') {
    throw new RegistryConfigError(`${where}: upstream_api 'responses' needs a chat-completions-compatible kind (family compat); '${kind}' is of family ${family}`);
  }
  if (route.provider !== undefined && (!LABEL.test(route.provider) || ctx.reservedLabels.has(route.provider))) {
    throw new RegistryStopError(`model '${model.id}' route ${index}: provider label ${JSON.stringify(route.provider)} is ${LABEL.test(route.provider) ? 'reserved (a built-in provider name)' : 'malformed (lowercase letters, digits, - and _, at most 64 characters)'}`);
  }
  try {
    if (!merged.base_url) throw new RegistryConfigError(`${where}: base_url is required on the model or on every route`);
    const baseUrl = expandOrSkip(merged.base_url, 'base_url', ctx.env);
    const keySource = route.api_keys ?? (route.api_key !== undefined ? [route.api_key] : model.api_keys ?? (model.api_key !== undefined ? [model.api_key] : []));
    const apiKeys = keySource.map((k) => expandOrSkip(k, keySource.length > 1 ? 'api_keys' : 'api_key', ctx.env));
    const providerModelId = merged.provider_model_id === undefined ? model.id : expandOrSkip(merged.provider_model_id, 'provider_model_id', ctx.env);
    const embeddings = validateEmbeddingsPath(rawRoute.embeddings_path, ctx.env, where);
    if (!embeddings.ok) {
      if (route.optional) throw new Skip(embeddings.variable, 'embeddings_path');
      throw new RegistryConfigError(`${where}: embeddings_path variable ${embeddings.variable} is unset or blank (required route)`);
    }
    const key = `${kind}\n${baseUrl}\n${providerModelId}`;
    const occurrence = seen.get(key) ?? 0;
    seen.set(key, occurrence + 1);
    return {
      endpointId: endpointIdFor(model.id, kind, baseUrl, providerModelId, occurrence),
      routeId: `${model.id}#${index}`,
      kind,
      providerLabel: route.provider ?? kind,
      providerDisplayName: route.provider_display_name,
      providerType: route.provider_type,
      baseUrl,
      apiKeys,
      providerModelId,
      weight: route.weight ?? 1,
      embeddingsPath: embeddings.path,
      contextLength: merged.context_length ?? 8192,
      maxOutputLength: merged.max_output_length ?? 4096,
      supportsTools: merged.supports_tools ?? false,
      supportsStructuredOutput: merged.supports_structured_output ?? false,
      supportedParams: merged.supported_params ?? DEFAULT_SUPPORTED_PARAMS,
      reasoningEfforts: merged.reasoning_efforts ?? [],
      onDemand: merged.on_demand ?? false,
      processor: merged.processor ?? 'default',
      extraBody: merged.extra_body,
      priorityScheduling: merged.priority_scheduling ?? false,
      nullCacheDetailsMeansMiss: rawRoute.null_cache_details_means_miss === true,
      upstreamApi: merged.upstream_api ?? 'chat_completions',
      quantization: merged.quantization ?? 'bf16',
      inputModalities: merged.input_modalities ?? ['text'],
      outputModalities: merged.output_modalities ?? ['text'],
      routeMetadata: merged.route_metadata ?? {},
      pricing: merged.pricing_schedule ? { ...merged.pricing, schedule: compileSchedule(merged.pricing_schedule, merged.pricing) } : merged.pricing,
      costMetadata: Object.fromEntries(
        (['routewise_pool', 'quota_pool', 'concurrency_pool', 'quota_source', 'quota', 'concurrency'] as const)
          .filter((k) => route[k] !== undefined).map((k) => [k, route[k]]),
      ),
    };
  } catch (err) {
    if (err instanceof Skip && route.optional) {
      ctx.warn(`Skipping optional route ${index} of model ${model.id}: ${err.variable} (${err.field}) is unset or blank`, { model: model.id, route: index, variable: err.variable });
      return undefined;
    }
    throw err;
  }
}

/** Builds a model, or reports why it is skipped. */
export function buildModel(raw: unknown, position: number, ctx: BuildContext): BuildOutcome {
  const label = typeof (raw as { id?: unknown })?.id === 'string' ? `model '${(raw as { id: string }).id}'` : `model #${position}`;
  const where = `${ctx.file}: ${label}`;
  const entry = (raw ?? {}) as Record<string, unknown>;
  if ('embeddings_path' in entry) throw new RegistryConfigError(`${where}: embeddings_path is route-only; move it onto a route entry`);
  if ('null_cache_details_means_miss' in entry) {
    throw new RegistryConfigError(`${where}: null_cache_details_means_miss is route-level only; declare it on the route`);
  }
  const model = parse(modelSchema, raw, where);
  if (model.api_key !== undefined && model.api_keys !== undefined) throw new RegistryConfigError(`${where}: set either api_key or api_keys, not both`);
  checkRouter(model, where, ctx);
  const seen = new Map<string, number>();
  const rawRoutes = model.route ?? [{}];
  const routes: Route[] = [];
  try {
    rawRoutes.forEach((r, i) => {
      const route = buildRoute(model, r, i, ctx, seen);
      if (route) routes.push(route);
    });
  } catch (err) {
    if (err instanceof Skip) return { skipped: `Skipping model ${model.id}: ${err.variable} (${err.field}) is unset or blank`, variable: err.variable };
    throw err;
  }
  if (routes.length === 0) return { skipped: `Skipping model ${model.id}: every route was skipped`, variable: '' };
  return {
    model: {
      id: model.id,
      name: model.name,
      aliases: model.aliases ?? [],
      modelType: model.model_type ?? model.type ?? 'chat',
      router: model.router,
      routerParams: model.router_params ?? {},
      requiredRole: (model.required_role ?? (model.admin_only ? 'admin' : undefined)) as Model['requiredRole'],
      onDemand: routes.some((r) => r.onDemand),
      contextLength: model.context_length ?? 8192,
      maxOutputLength: model.max_output_length ?? 4096,
      routes,
      ...(model.demo ? { demo: true } : {}),
    },
  };
}
