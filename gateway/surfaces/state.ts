/**
 * Request state and dependencies shared by the inference surfaces.
 */
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
