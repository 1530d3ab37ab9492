/**
 * The inference surfaces' dependencies, built from settings (used by `gateway/assemble.ts`).
 */
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import { AuthFailureBlocklist } from './auth/auth-failure-blocklist';
import { createAuthenticator } from './auth/caller';
import { AuthGate } from './auth/gate';
import { clientAddressResolverFrom } from './auth/request-origin';
import { UserLimits } from './auth/user-limits';
import type { ApiKeyCache } from './identity/api-keys';
import type { RegistryHolder } from './registry/holder';
import { effectiveDefaultRouter } from './routing/routewise';
import { Routewise } from './routing/routewise-runtime';
import type { GatewayContextDeps } from './surfaces/state';
import { UpstreamClient } from './upstream/client';

export interface ContextOptions {
  registry: RegistryHolder;
  log: Logger;
  /** The API key cache (absent without a database: no key is valid). */
  keys?: ApiKeyCache | undefined;
  rng?: (() => number) | undefined;
}

export function gatewayContextDeps(settings: Settings, options: ContextOptions): GatewayContextDeps {
  const authenticator = createAuthenticator({ userAuthEnabled: settings.USER_AUTH_ENABLED, keys: options.keys });
  const blocklist = new AuthFailureBlocklist({
    threshold: settings.AUTH_FAILURE_BLOCK_THRESHOLD,
    windowSec: settings.AUTH_FAILURE_BLOCK_WINDOW_SEC,
    durationSec: settings.AUTH_FAILURE_BLOCK_DURATION_SEC,
    exempt: settings.AUTH_FAILURE_BLOCK_EXEMPT_IPS,
  });
  return {
    registry: options.registry,
    upstream: new UpstreamClient({
      connectMs: settings.UPSTREAM_CONNECT_TIMEOUT_SECONDS * 1000,
      firstByteMs: settings.UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS * 1000,
      idleMs: settings.UPSTREAM_IDLE_TIMEOUT_SECONDS * 1000,
    }),
    authenticator,
    gate: new AuthGate(authenticator, blocklist, options.log, { identifyCaller: settings.AUTH_FAILURE_IDENTIFY_CALLER }),
    limits: new UserLimits({ concurrency: settings.USER_CONCURRENCY_LIMIT, dailyQuotaUsd: settings.USER_DAILY_QUOTA_USD }),
    clientAddress: clientAddressResolverFrom(settings),
    rng: options.rng ?? Math.random,
    routewise: new Routewise({ defaultRouter: effectiveDefaultRouter('fixed', settings.ENABLE_ROUTEWISE) }),
    tiers: { largeTokens: settings.ROUTING_LARGE_PROMPT_TOKENS, elephantTokens: settings.ROUTING_ELEPHANT_PROMPT_TOKENS },
    maxBodyBytes: Math.round(settings.GATEWAY_MAX_BODY_MIB * 1024 * 1024),
  };
}
