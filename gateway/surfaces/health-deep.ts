/**
 * `GET /health/deep` (docs/routing.md): per-endpoint availability and circuit state (and
 * `degraded` after an upstream rejected the gateway's credential), `route_exclusions` (one entry
 * per (model, endpoint) the runtime configuration keeps out of traffic, with configured weight,
 * effective weight and reasons), and a providers map merging both. Exclusions are deliberate
 * and never degrade the verdict; an open or half-open circuit or a rejected credential on a
 * route that takes traffic does. No credentials or base URLs are shown (no auth on this path).
 */
import type Router from '@koa/router';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { Registry } from '../registry';
import type { CircuitBreakers, CircuitState } from '../routing/breaker';
import type { ConcurrencyLimiter } from '../routing/concurrency';
import type { RouteInfo } from '../runtime-config/overlay';

export interface EndpointHealth {
  endpoint_id: string;
  provider: string;
  models: string[];
  circuit: CircuitState;
  availability: number;
  consecutive_failures: number;
  probe_in_flight: boolean;
  /** An upstream rejected the gateway's own credential (401). */
  degraded: boolean;
  status: 'healthy' | 'degraded';
}

export interface RouteExclusion {
  model: string;
  endpoint_id: string;
  provider: string;
  configured_weight: number;
  effective_weight: number;
  reasons: string[];
}

export interface ProviderHealth {
  status: 'healthy' | 'degraded';
  endpoints: string[];
  excluded_from_models: string[];
  /** Model id → why that model's route of this provider is excluded. */
  exclusion_reasons: Record<string, string[]>;
}

export interface DeepHealthBody {
  status: 'healthy' | 'degraded';
  endpoints: EndpointHealth[];
  route_exclusions: RouteExclusion[];
  providers: Record<string, ProviderHealth>;
  /** Outbound concurrency lanes by provider label (key never shown). */
  concurrency: ReturnType<ConcurrencyLimiter['snapshot']>;
}

export interface DeepHealthDeps {
  /** The registry as loaded from the files (every route, whatever its effective weight). */
  base: () => Registry;
  /** The effective registry (weights after overrides). */
  current: () => Registry;
  /** Route id → listing info of the runtime configuration (reasons for weight 0). */
  routeInfo: () => ReadonlyMap<string, RouteInfo>;
  breakers: CircuitBreakers;
  concurrency: ConcurrencyLimiter;
}

/** Only `configured weight 0` is not an exclusion: the route is configured off. */
const isExclusion = (info: RouteInfo) => info.effectiveWeight === 0 && info.reasons.some((r) => r !== 'configured weight 0');

function provider(map: Record<string, ProviderHealth>, label: string): ProviderHealth {
  return (map[label] ??= { status: 'healthy', endpoints: [], excluded_from_models: [], exclusion_reasons: {} });
}

/** Builds the `/health/deep` body from the current in-process state. */
export function deepHealth(deps: DeepHealthDeps): DeepHealthBody {
  const endpoints = new Map<string, EndpointHealth>();
  const providers: Record<string, ProviderHealth> = {};
  for (const model of deps.current().models) {
    for (const route of model.routes) {
      if (route.weight <= 0) continue;
      let entry = endpoints.get(route.endpointId);
      if (!entry) {
        const s = deps.breakers.snapshot(route.endpointId);
        const degraded = s.state !== 'closed' || s.degraded;
        entry = {
          endpoint_id: route.endpointId, provider: route.providerLabel, models: [], circuit: s.state,
          availability: Number(s.availability.toFixed(4)), consecutive_failures: s.consecutive_failures,
          probe_in_flight: s.probe_in_flight, degraded: s.degraded, status: degraded ? 'degraded' : 'healthy',
        };
        endpoints.set(route.endpointId, entry);
        const p = provider(providers, route.providerLabel);
        p.endpoints.push(route.endpointId);
        if (degraded) p.status = 'degraded';
      }
      if (!entry.models.includes(model.id)) entry.models.push(model.id);
    }
  }
  const labels = new Map<string, string>();
  for (const registry of [deps.base(), deps.current()]) for (const model of registry.models) for (const route of model.routes) labels.set(route.routeId, route.providerLabel);
  const exclusions: RouteExclusion[] = [];
  for (const info of deps.routeInfo().values()) {
    if (!isExclusion(info)) continue;
    const label = labels.get(info.routeId) ?? info.endpointId;
    exclusions.push({
      model: info.modelId, endpoint_id: info.endpointId, provider: label,
      configured_weight: info.configuredWeight, effective_weight: info.effectiveWeight, reasons: [...info.reasons],
    });
    const p = provider(providers, label);
    if (!p.excluded_from_models.includes(info.modelId)) p.excluded_from_models.push(info.modelId);
    p.exclusion_reasons[info.modelId] = [...info.reasons];
  }
  const list = [...endpoints.values()];
  return {
    status: list.some((e) => e.status === 'degraded') ? 'degraded' : 'healthy',
    endpoints: list,
    route_exclusions: exclusions,
    providers,
    concurrency: deps.concurrency.snapshot(),
  };
}

/** `GET /health/deep`: 200 for both verdicts (like `/health`). */
export function deepHealthRouter(deps: DeepHealthDeps): Router {
  const router = createRouter();
  const open = publicAccess();
  router.get('/health/deep', open, (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = deepHealth(deps);
  });
  documentRoute(router, 'GET', '/health/deep', { summary: 'Routes, circuit breakers and outbound concurrency.' });
  return router;
}
