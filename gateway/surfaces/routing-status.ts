/**
 * `GET /routing`: every published route with its effective weight, and the routing
 * file's status. No credentials are asked for, so the body is sensitive (it reveals upstream base
 * URLs and the topology); it never carries API keys. Expose it only on trusted networks.
 */
import type Router from '@koa/router';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import type { RegistryHolder } from '../registry/holder';
import type { EndpointHealth, RoutingFile } from '../routing-file';

export interface RoutingRouteView {
  model: string;
  route_id: string;
  endpoint_id: string;
  provider: string;
  base_url: string;
  /** Effective weight: registry weight after admin overrides (database) or the split (no database). */
  weight: number;
  router: string;
}

export interface RoutingStatusBody {
  routes: RoutingRouteView[];
  manager_status: {
    /** `loaded`, `failed` (RoutingManager failed to initialize; registry weights apply) or `not_found`. */
    status: string;
    source_file: string;
    default_router: string;
    /** Whether the local/remote split sets the weights (never with a database). */
    split_applied: boolean;
    local_fraction: number;
    health_check_seconds: number;
    /** Local endpoint → last probe result; empty when probing is off. */
    endpoint_health: Record<string, EndpointHealth>;
    /** Always false: probe results never change routing. */
    endpoint_health_enforced: false;
    error?: string;
  };
}

/** The body of `GET /routing` from the registry now served and the routing file. */
export function routingStatus(registry: RegistryHolder, routingFile: RoutingFile): RoutingStatusBody {
  const { state } = routingFile;
  const routes = registry.current.models.flatMap((model) => model.routes.map((route): RoutingRouteView => ({
    model: model.id, route_id: route.routeId, endpoint_id: route.endpointId, provider: route.providerLabel, base_url: route.baseUrl,
    weight: route.weight, router: model.router ?? state.defaultRouter,
  })));
  return {
    routes,
    manager_status: {
      status: state.status,
      source_file: state.source,
      default_router: state.defaultRouter,
      split_applied: routingFile.splitApplied,
      local_fraction: state.config.local_fraction,
      health_check_seconds: state.config.health_check,
      endpoint_health: routingFile.probe.snapshot(),
      endpoint_health_enforced: false,
      ...(state.failure ? { error: state.failure } : {}),
    },
  };
}

export function routingStatusRouter(deps: { registry: RegistryHolder; routingFile: RoutingFile }): Router {
  const router = createRouter();
  const open = publicAccess();
  router.get('/routing', open, (ctx) => {
    ctx.body = routingStatus(deps.registry, deps.routingFile);
  });
  return router;
}
