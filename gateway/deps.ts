/**
 * The inference surfaces' dependencies, built from settings (used by `main.ts` and tests).
 */
import type { Settings } from '../lib/settings';
import { createAuthenticator } from './auth/caller';
import { clientAddressResolverFrom } from './auth/request-origin';
import type { RegistryHolder } from './registry/holder';
import type { GatewayContextDeps } from './surfaces/state';
import { UpstreamClient } from './upstream/client';

export function gatewayContextDeps(settings: Settings, registry: RegistryHolder, rng: () => number = Math.random): GatewayContextDeps {
  return {
    registry,
    upstream: new UpstreamClient({
      connectMs: settings.UPSTREAM_CONNECT_TIMEOUT_SECONDS * 1000,
      firstByteMs: settings.UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS * 1000,
      idleMs: settings.UPSTREAM_IDLE_TIMEOUT_SECONDS * 1000,
    }),
    authenticator: createAuthenticator({ userAuthEnabled: settings.USER_AUTH_ENABLED }),
    clientAddress: clientAddressResolverFrom(settings),
    rng,
    tiers: { largeTokens: settings.ROUTING_LARGE_PROMPT_TOKENS, elephantTokens: settings.ROUTING_ELEPHANT_PROMPT_TOKENS },
    maxBodyBytes: Math.round(settings.GATEWAY_MAX_BODY_MIB * 1024 * 1024),
  };
}
