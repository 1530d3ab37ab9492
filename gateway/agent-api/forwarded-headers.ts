/**
 * The headers the gateway sends on when it forwards a request to the control-plane API, and the
 * answer's headers it sends back (docs/one-origin.md). Pure: no I/O.
 *
 * - Hop-by-hop headers (RFC 9110 7.6.1, plus those a `Connection` header names) are never
 *   forwarded either way; `Host` is the API's (the client's goes in `X-Forwarded-Host`).
 * - Forwarding headers (`X-Forwarded-*`, `Forwarded`, `X-Real-IP`, the CDN connecting-IP headers)
 *   are kept only when the gateway itself trusts its peer to assert them
 *   (`trusted_proxy_headers` of the resolved client address, docs/client-address.md); otherwise
 *   they are dropped, so the API (which trusts the gateway) never reads a client's own claim.
 * - `X-Forwarded-For` is the received chain (when trusted) with the socket peer appended;
 *   `X-Forwarded-Proto` and `X-Forwarded-Host` are the trusted proxy's values, else what this
 *   hop saw.
 * - `X-Request-Id` is the gateway's request id, so both processes log one id.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientIpInfo } from '../../lib/client-address/client-address';

const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'http2-settings', 'expect', 'host',
]);

/** Headers that assert where a request comes from; kept only from a peer the gateway trusts. */
const FORWARDING: ReadonlySet<string> = new Set([
  'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-prefix', 'forwarded',
  'x-real-ip', 'cf-connecting-ip', 'cf-connecting-ipv6',
]);

/** The header names a `Connection` header lists (they are hop-by-hop too). */
function connectionTokens(value: string | string[] | undefined): Set<string> {
  const out = new Set<string>();
  if (value === undefined) return out;
  for (const line of Array.isArray(value) ? value : [value]) for (const token of line.split(',')) out.add(token.trim().toLowerCase());
  return out;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** What the forwarded request's headers are built from. */
export interface ForwardedRequest {
  headers: IncomingHttpHeaders;
  /** The gateway's resolution of the caller (its `peer_ip` and whether the peer may assert forwarding headers). */
  client: ClientIpInfo;
  /** The gateway's request id. */
  requestId: string;
  /** Whether the client reached the gateway over TLS. */
  encrypted: boolean;
}

/** The request headers to send to the API. */
export function forwardedRequestHeaders(request: ForwardedRequest): Record<string, string | string[]> {
  const { headers, client } = request;
  const trusted = client.trusted_proxy_headers;
  const dropped = connectionTokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || dropped.has(name) || FORWARDING.has(name) || name === 'x-request-id') continue;
    out[name] = value;
  }
  if (trusted) {
    for (const name of FORWARDING) {
      const value = headers[name];
      if (value !== undefined) out[name] = value;
    }
  }
  const chain = trusted ? joined(headers['x-forwarded-for']) : undefined;
  if (client.peer_ip !== 'unknown') out['x-forwarded-for'] = chain ? `${chain}, ${client.peer_ip}` : client.peer_ip;
  else if (chain) out['x-forwarded-for'] = chain;
  const proto = trusted ? joined(headers['x-forwarded-proto']) : undefined;
  out['x-forwarded-proto'] = proto ?? (request.encrypted ? 'https' : 'http');
  const host = (trusted ? joined(headers['x-forwarded-host']) : undefined) ?? headers.host;
  if (host !== undefined) out['x-forwarded-host'] = host;
  out['x-request-id'] = request.requestId;
  return out;
}

/** The API's answer headers to send to the client: all but the hop-by-hop ones. */
export function forwardedResponseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const dropped = connectionTokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || dropped.has(name)) continue;
    out[name] = value;
  }
  return out;
}
