/**
 * Request state and dependencies shared by the inference surfaces.
 */
import type { ParameterizedContext } from 'koa';
import type { RequestState } from '../../lib/http/request-context';
import type { Authenticator } from '../auth/caller';
import type { RegistryHolder } from '../registry/holder';
import type { TierThresholds } from '../routing/prompt-estimate';
import type { Rng } from '../routing/weighted-order';
import type { UpstreamClient } from '../upstream/client';
import type { FailedAttempt } from '../upstream/upstream-error';
import type { Usage } from './usage';

/** The internal `_routing` attribution (spec 2.10): kept for logs and analytics, never sent to clients. */
export interface RoutingAttribution {
  provider: string;
  base_url: string;
  endpoint_id: string;
  fallback?: boolean;
  failed_attempts?: FailedAttempt[];
}

export interface GatewayState extends RequestState {
  routing?: RoutingAttribution;
  usage?: Usage | undefined;
}

export interface GatewayContextDeps {
  registry: RegistryHolder;
  upstream: UpstreamClient;
  authenticator: Authenticator;
  rng: Rng;
  tiers: TierThresholds;
  maxBodyBytes: number;
}

/** A Koa context of the inference surfaces. */
export type InferenceContext = ParameterizedContext<GatewayState>;

/** A handler of one inference route (dispatched without the router: see `inference-routes.ts`). */
export type InferenceHandler = (ctx: InferenceContext) => Promise<void>;

/** Sends a JSON body, serialized here with an explicit type (no MIME lookup per response). */
export function sendJson(ctx: InferenceContext, body: unknown): void {
  ctx.res.setHeader('content-type', 'application/json; charset=utf-8');
  ctx.body = JSON.stringify(body);
}
