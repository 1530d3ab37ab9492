/**
 * Where a request comes from, as the gateway and the control-plane API record it: the resolved client address
 * (docs/client-address.md) and the `http_request` log fields (`remote_ip`, `peer_ip`, `ip_source`, forwarding
 * header values, `user_agent`, `host`, `origin`, `referer`, `session_id`). Resolved once, at the
 * start of the request (the socket's address is gone once it closes).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger';
import { cleanText } from '../text';
import type { Settings } from '../settings';
import {
  CLIENT_IP_UNRESOLVED_EVENT, clientIpLogFields, createClientAddressResolver, splitNetworkList,
  type ClientAddressResolver, type ClientIpInfo,
} from './client-address';

/** The resolver configuration from settings; invalid networks or flag combinations throw at startup. */
export function clientAddressResolverFrom(settings: Pick<Settings,
  'TRUST_PROXY_HEADERS' | 'TRUST_CDN_HEADERS' | 'TRUST_X_REAL_IP' | 'TRUSTED_PROXIES' | 'TRUSTED_CLOUDFLARE_NETWORKS' | 'TRUSTED_DIRECT_CLIENT_NETWORKS'>): ClientAddressResolver {
  return createClientAddressResolver({
    trustProxyHeaders: settings.TRUST_PROXY_HEADERS,
    trustCdnHeaders: settings.TRUST_CDN_HEADERS,
    trustXRealIp: settings.TRUST_X_REAL_IP,
    trustedProxies: splitNetworkList(settings.TRUSTED_PROXIES),
    cdnNetworks: splitNetworkList(settings.TRUSTED_CLOUDFLARE_NETWORKS),
    directClientNetworks: splitNetworkList(settings.TRUSTED_DIRECT_CLIENT_NETWORKS),
  });
}

export interface RequestOrigin {
  client: ClientIpInfo;
  /** Fields for the `http_request` line (built only when the line is written). */
  fields: () => Record<string, unknown>;
}

/**
 * Adds a request header (cut to 256 characters, cleaned: docs/security.md) to `out` when present.
 * Node's parser already refuses control characters in header values; the clean costs two scans of
 * a short string and allocates nothing when the value is clean.
 */
function addHeader(out: Record<string, unknown>, field: string, req: IncomingMessage, name: string): void {
  const value = req.headers[name];
  if (value !== undefined) out[field] = cleanText((Array.isArray(value) ? value.join(', ') : value).slice(0, 256));
}

/** The `http_request` log fields for a request: the client address fields plus the request headers present. */
export function requestLogFields(client: ClientIpInfo, req: IncomingMessage): Record<string, unknown> {
  const out = clientIpLogFields(client);
  addHeader(out, 'user_agent', req, 'user-agent');
  addHeader(out, 'host', req, 'host');
  addHeader(out, 'origin', req, 'origin');
  addHeader(out, 'referer', req, 'referer');
  addHeader(out, 'session_id', req, 'x-session-id');
  return out;
}

/** Resolves a request's origin; an unresolved address is logged as `client_ip_resolution_unresolved` (debug). */
export function describeRequest(resolver: ClientAddressResolver, log: Logger, req: IncomingMessage): RequestOrigin {
  const client = resolver.resolve({ peer: req.socket.remoteAddress, rawHeaders: req.rawHeaders });
  if (!client.resolved) {
    log.debug({ event: CLIENT_IP_UNRESOLVED_EVENT, reason: client.reason, peer_ip: client.peer_ip, ip_source: client.source }, CLIENT_IP_UNRESOLVED_EVENT);
  }
  return { client, fields: () => requestLogFields(client, req) };
}
