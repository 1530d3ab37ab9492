/**
 * Client address resolution (docs/client-address.md): which address a request comes from, given the
 * socket peer and the forwarding headers, trusting those headers only from authorized peers.
 *
 * Pure: no I/O, no `process.env`, no mutable module state. The configuration is validated once
 * by {@link createClientAddressResolver} (a {@link ClientAddressConfigError} stops startup) and
 * its networks are precompiled; {@link ClientAddressResolver.resolve} then runs per request
 * without regexes and returns a frozen {@link ClientIpInfo}. The rules and every decision are
 * documented in `docs/client-address.md`.
 */
import {
  CidrSet, CidrSyntaxError, formatIp, newIpWords, parseCidr, parseIpInto, parseIpv4,
  type Cidr, type IpFamily, type IpWords,
} from './cidr';
import { inClassE, routableWords } from './ip-routability';

export { affinityKey, ipBucket, isRoutable, NON_ROUTABLE_NETWORKS } from './ip-routability';

// ---------------------------------------------------------------------------------------------
// Public types

/** Which rung decided the outcome (the address, or `unknown` when `resolved` is false). */
export type ClientIpSource =
  /** The socket peer (no trusted header applied, or the peer was not authorized). */
  | 'socket'
  /** The socket peer, non-routable but inside `TRUSTED_DIRECT_CLIENT_NETWORKS`. */
  | 'direct_client_network'
  /** `CF-Connecting-IP` from an authorized CDN peer. */
  | 'cdn'
  /** `CF-Connecting-IPv6`, chosen over a `240.0.0.0/4` `CF-Connecting-IP`. */
  | 'cdn_ipv6'
  /** The right-to-left `X-Forwarded-For` walk from an authorized proxy. */
  | 'x_forwarded_for'
  /** `X-Real-IP` from an authorized proxy (XFF absent). */
  | 'x_real_ip';

/** Why `client_ip` is `unknown` (`reason` is null when `resolved` is true). */
export type ClientIpUnresolvedReason =
  /** No socket peer address (the socket was already closed). */
  | 'peer_missing'
  /** The socket peer is not a parseable address. */
  | 'peer_invalid'
  /** The socket peer is non-routable and not in `TRUSTED_DIRECT_CLIENT_NETWORKS`. */
  | 'peer_not_routable'
  /** `CF-Connecting-IP` (or the chosen `CF-Connecting-IPv6`) is not an address. */
  | 'cdn_header_invalid'
  /** `CF-Connecting-IP` (or the chosen `CF-Connecting-IPv6`) is non-routable. */
  | 'cdn_header_not_routable'
  /** `CF-Connecting-IP` appeared on more than one header line. */
  | 'repeated_cf_connecting_ip'
  /** `CF-Connecting-IPv6` appeared on more than one header line. */
  | 'repeated_cf_connecting_ipv6'
  /** `X-Forwarded-For` lists more than {@link MAX_FORWARDED_HOPS} hops. */
  | 'xff_too_many_hops'
  /** The first untrusted `X-Forwarded-For` hop (from the right) is not an address. */
  | 'xff_hop_invalid'
  /** The first untrusted `X-Forwarded-For` hop (from the right) is non-routable. */
  | 'xff_hop_not_routable'
  /** Every `X-Forwarded-For` hop is a trusted proxy: no client is named. */
  | 'xff_all_trusted'
  /** `X-Real-IP` appeared on more than one header line. */
  | 'repeated_x_real_ip';

/** The client address record (`ClientIpInfo`). Frozen. */
export interface ClientIpInfo {
  /** The client address in canonical text (IPv4-mapped shown as IPv4), or `unknown`. */
  readonly client_ip: string;
  /** The socket peer in canonical text; the raw text if it does not parse; `unknown` if absent. */
  readonly peer_ip: string;
  /** The rung that decided the outcome, also when it decided `unknown`. */
  readonly source: ClientIpSource;
  /** Whether `client_ip` is an address (false: `unknown`, see `reason`). */
  readonly resolved: boolean;
  /** The peer is authorized to assert `X-Forwarded-For`/`X-Real-IP` (`TRUST_PROXY_HEADERS=1`, peer in `TRUSTED_PROXIES`). */
  readonly trusted_proxy_headers: boolean;
  /** A forwarding header (CDN, XFF or X-Real-IP) decided the outcome: `source` is not `socket`/`direct_client_network`. */
  readonly trusted_forwarded_headers: boolean;
  /** The peer is authorized to assert the CDN headers (`TRUST_CDN_HEADERS=1`, peer in `TRUSTED_CLOUDFLARE_NETWORKS`). */
  readonly trusted_cloudflare_headers: boolean;
  /** Raw `X-Forwarded-For` lines joined with `", "` in wire order; null when absent. Recorded whether trusted or not. */
  readonly x_forwarded_for: string | null;
  /** Raw `X-Real-IP` (repeated lines joined with `", "`); null when absent. */
  readonly x_real_ip: string | null;
  /** Raw `CF-Connecting-IP` (repeated lines joined with `", "`); null when absent. */
  readonly cf_connecting_ip: string | null;
  /** Raw `CF-Connecting-IPv6` (repeated lines joined with `", "`); null when absent. */
  readonly cf_connecting_ipv6: string | null;
  /** Why the address is `unknown`; null when resolved. */
  readonly reason: ClientIpUnresolvedReason | null;
}

/** Configuration, as parsed from the environment by the caller (this module reads none). */
export interface ClientAddressConfig {
  /** `TRUST_PROXY_HEADERS`: honour `X-Forwarded-For` from `TRUSTED_PROXIES` peers. */
  readonly trustProxyHeaders: boolean;
  /** `TRUST_CDN_HEADERS`: honour `CF-Connecting-IP(v6)` from `TRUSTED_CLOUDFLARE_NETWORKS` peers. */
  readonly trustCdnHeaders: boolean;
  /** `TRUST_X_REAL_IP`: honour `X-Real-IP` from `TRUSTED_PROXIES` peers when XFF is absent. */
  readonly trustXRealIp: boolean;
  /** `TRUSTED_PROXIES`: CIDRs (or bare addresses) of proxies allowed to assert XFF/X-Real-IP. */
  readonly trustedProxies: readonly string[];
  /** `TRUSTED_CLOUDFLARE_NETWORKS` (env form of the `trusted_cloudflare_networks` setting): CIDRs of the CDN's edge networks. */
  readonly cdnNetworks: readonly string[];
  /** `TRUSTED_DIRECT_CLIENT_NETWORKS`: private networks whose socket peers count as clients. */
  readonly directClientNetworks: readonly string[];
}

export interface ClientAddressInput {
  /** The socket peer, e.g. `req.socket.remoteAddress` (may be IPv4-mapped, or undefined once closed). */
  readonly peer: string | undefined;
  /** `req.rawHeaders`: alternating name, value, in wire order (needed to see repeated headers). */
  readonly rawHeaders: readonly string[];
}

export interface ClientAddressResolver {
  resolve(input: ClientAddressInput): ClientIpInfo;
}

/** Most `X-Forwarded-For` hops inspected; a longer list fails closed. */
export const MAX_FORWARDED_HOPS = 32;

/** Log event for a request whose client address stayed `unknown`; the caller logs it. */
export const CLIENT_IP_UNRESOLVED_EVENT = 'client_ip_resolution_unresolved';

/** Names of the configuration variables, as used in startup errors. */
export const CLIENT_ADDRESS_VARIABLES = Object.freeze({
  trustProxyHeaders: 'TRUST_PROXY_HEADERS',
  trustCdnHeaders: 'TRUST_CDN_HEADERS',
  trustXRealIp: 'TRUST_X_REAL_IP',
  trustedProxies: 'TRUSTED_PROXIES',
  cdnNetworks: 'TRUSTED_CLOUDFLARE_NETWORKS',
  directClientNetworks: 'TRUSTED_DIRECT_CLIENT_NETWORKS',
} as const);

/** A startup error: every problem names its variable and the fix. */
export class ClientAddressConfigError extends Error {
  constructor(readonly problems: readonly string[], readonly variables: readonly string[]) {
    super(`Invalid client address configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ClientAddressConfigError';
  }
}

/**
 * Splits a comma-separated network list from the environment (`TRUSTED_PROXIES=10.0.0.0/8, 192.168.0.0/16`):
 * entries trimmed, empty entries dropped, undefined is the empty list. Validation happens in
 * {@link createClientAddressResolver}.
 */
export function splitNetworkList(value: string | undefined): string[] {
  if (value === undefined) return [];
  const out: string[] = [];
  for (const item of value.split(',')) {
    const trimmed = item.trim();
    if (trimmed !== '') out.push(trimmed);
  }
  return out;
}

/**
 * The `http_request` log fields for a record: `remote_ip`, `peer_ip`, `ip_source`,
 * and each forwarding header only when the request carried it (an absent header is left out,
 * not written as null: every field costs serialization on the hot path). A fresh object the
 * caller may add to.
 */
export function clientIpLogFields(info: ClientIpInfo): Record<string, unknown> {
  const out: Record<string, unknown> = { remote_ip: info.client_ip, peer_ip: info.peer_ip, ip_source: info.source };
  if (info.x_forwarded_for !== null) out.x_forwarded_for = info.x_forwarded_for;
  if (info.x_real_ip !== null) out.x_real_ip = info.x_real_ip;
  if (info.cf_connecting_ip !== null) out.cf_connecting_ip = info.cf_connecting_ip;
  if (info.cf_connecting_ipv6 !== null) out.cf_connecting_ipv6 = info.cf_connecting_ipv6;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Header values

function isOws(c: number): boolean {
  return c === 32 || c === 9;
}

/** Index of the char code in `s[from, end)`, or -1 (never scans past `end`). */
function indexWithin(s: string, code: number, from: number, end: number): number {
  for (let i = from; i < end; i += 1) if (s.charCodeAt(i) === code) return i;
  return -1;
}

function parsePort(s: string, start: number, end: number): boolean {
  const length = end - start;
  if (length < 1 || length > 5) return false;
  let value = 0;
  for (let i = start; i < end; i += 1) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
    value = value * 10 + (c - 48);
  }
  return value <= 65535;
}

/**
 * Parses one forwarded address (an XFF hop or a singleton header value) in `s[start, end)`:
 * surrounding spaces/tabs trimmed; accepted forms are `a.b.c.d`, `a.b.c.d:port`, IPv6,
 * `[IPv6]` and `[IPv6]:port`. Anything else (empty, `unknown`, quotes, zone ids, host names,
 * `[a.b.c.d]`, an unbracketed IPv6 is never read as having a port) gives 0.
 */
function parseForwarded(s: string, start: number, end: number, out: IpWords): IpFamily {
  while (start < end && isOws(s.charCodeAt(start))) start += 1;
  while (end > start && isOws(s.charCodeAt(end - 1))) end -= 1;
  // The longest accepted form, `[IPv6 of 45 characters]:65535`, has 53 characters.
  if (start === end || end - start > 53) return 0;
  if (s.charCodeAt(start) === 91 /* [ */) {
    const close = indexWithin(s, 93 /* ] */, start + 1, end);
    if (close < 0) return 0;
    if (close + 1 < end && (s.charCodeAt(close + 1) !== 58 /* : */ || !parsePort(s, close + 2, end))) return 0;
    return parseIpInto(s, start + 1, close, out) === 6 ? 6 : 0;
  }
  const colon = indexWithin(s, 58 /* : */, start, end);
  if (colon > start) {
    // `a.b.c.d:port`: a dotted quad before the first colon. (Otherwise the text is IPv6 and an
    // unbracketed IPv6 never carries a port.)
    if (parseIpv4(s, start, colon, out)) return parsePort(s, colon + 1, end) ? 4 : 0;
  }
  return parseIpInto(s, start, end, out);
}

// ---------------------------------------------------------------------------------------------
// Resolver

/** Joins repeated header lines in wire order, as Node does for `X-Forwarded-For`. */
function appendLine(previous: string | null, value: string): string {
  return previous === null ? value : `${previous}, ${value}`;
}

function sameLower(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i += 1) {
    let c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** The per-request facts every outcome carries (one small object per request). */
interface RequestFacts {
  readonly peerIp: string;
  readonly proxyPeer: boolean;
  readonly cdnPeer: boolean;
  readonly xff: string | null;
  readonly xRealIp: string | null;
  readonly cf: string | null;
  readonly cf6: string | null;
}

function build(facts: RequestFacts, source: ClientIpSource, clientIp: string, reason: ClientIpUnresolvedReason | null): ClientIpInfo {
  return Object.freeze({
    client_ip: reason === null ? clientIp : 'unknown',
    peer_ip: facts.peerIp,
    source,
    resolved: reason === null,
    trusted_proxy_headers: facts.proxyPeer,
    trusted_forwarded_headers: source !== 'socket' && source !== 'direct_client_network',
    trusted_cloudflare_headers: facts.cdnPeer,
    x_forwarded_for: facts.xff,
    x_real_ip: facts.xRealIp,
    cf_connecting_ip: facts.cf,
    cf_connecting_ipv6: facts.cf6,
    reason,
  });
}

function compile(config: ClientAddressConfig, key: 'trustedProxies' | 'cdnNetworks' | 'directClientNetworks', problems: string[], variables: string[]): CidrSet {
  const variable = CLIENT_ADDRESS_VARIABLES[key];
  const entries = config[key];
  const cidrs: Cidr[] = [];
  for (const entry of entries) {
    try {
      cidrs.push(parseCidr(entry));
    } catch (error) {
      if (!(error instanceof CidrSyntaxError)) throw error;
      problems.push(`${variable}: entry ${error.message}; give comma-separated CIDRs like 10.0.0.0/8 or 2001:db8::/32 (fix or remove the entry)`);
      if (!variables.includes(variable)) variables.push(variable);
    }
  }
  return new CidrSet(cidrs);
}

/**
 * Validates the configuration (throws {@link ClientAddressConfigError} listing every problem)
 * and precompiles its networks. Call once at startup.
 */
export function createClientAddressResolver(config: ClientAddressConfig): ClientAddressResolver {
  const problems: string[] = [];
  const variables: string[] = [];
  const problem = (variable: string, message: string) => {
    problems.push(`${variable}: ${message}`);
    if (!variables.includes(variable)) variables.push(variable);
  };
  const proxies = compile(config, 'trustedProxies', problems, variables);
  const cdn = compile(config, 'cdnNetworks', problems, variables);
  const direct = compile(config, 'directClientNetworks', problems, variables);
  const V = CLIENT_ADDRESS_VARIABLES;
  if (config.trustCdnHeaders) {
    if (!config.trustProxyHeaders) {
      problem(V.trustCdnHeaders, `${V.trustCdnHeaders}=1 requires ${V.trustProxyHeaders}=1 (set ${V.trustProxyHeaders}=1 or ${V.trustCdnHeaders}=0)`);
    }
    if (config.cdnNetworks.length === 0) {
      problem(V.cdnNetworks, `${V.trustCdnHeaders}=1 requires a non-empty ${V.cdnNetworks} list (set the CDN's edge CIDRs or ${V.trustCdnHeaders}=0)`);
    }
  }
  if (config.trustXRealIp) {
    if (!config.trustProxyHeaders) {
      problem(V.trustXRealIp, `${V.trustXRealIp}=1 requires ${V.trustProxyHeaders}=1 (set ${V.trustProxyHeaders}=1 or ${V.trustXRealIp}=0)`);
    } else if (config.trustedProxies.length === 0) {
      problem(V.trustedProxies, `${V.trustXRealIp}=1 requires a non-empty ${V.trustedProxies} list (set the proxies' CIDRs or ${V.trustXRealIp}=0)`);
    }
  }
  if (config.trustProxyHeaders && !config.trustCdnHeaders && !config.trustXRealIp && config.trustedProxies.length === 0) {
    problem(V.trustedProxies, `${V.trustProxyHeaders}=1 requires a non-empty ${V.trustedProxies} list (set the proxies' CIDRs or ${V.trustProxyHeaders}=0)`);
  }
  if (problems.length > 0) throw new ClientAddressConfigError(problems, variables);

  const trustProxy = config.trustProxyHeaders;
  const trustCdn = config.trustProxyHeaders && config.trustCdnHeaders;
  const trustXRealIp = config.trustProxyHeaders && config.trustXRealIp;
  // Hops skipped in the XFF walk: the proxies, plus the CDN edges when CDN trust is on.
  const trustedHops = trustCdn ? CidrSet.union(proxies, cdn) : proxies;
  // Scratch buffers: resolve() is synchronous, so one pair per resolver is never shared.
  const peerWords = newIpWords();
  const hopWords = newIpWords();

  function resolve(input: ClientAddressInput): ClientIpInfo {
    // 1. One pass over the raw headers: wire order, case-insensitive names.
    let xff: string | null = null;
    let xRealIp: string | null = null;
    let xRealIpLines = 0;
    let cf: string | null = null;
    let cfLines = 0;
    let cf6: string | null = null;
    let cf6Lines = 0;
    const raw = input.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      switch (name.length) {
        case 15:
          if (sameLower(name, 'x-forwarded-for')) xff = appendLine(xff, raw[i + 1]!);
          break;
        case 9:
          if (sameLower(name, 'x-real-ip')) {
            xRealIp = appendLine(xRealIp, raw[i + 1]!);
            xRealIpLines += 1;
          }
          break;
        case 16:
          if (sameLower(name, 'cf-connecting-ip')) {
            cf = appendLine(cf, raw[i + 1]!);
            cfLines += 1;
          }
          break;
        case 18:
          if (sameLower(name, 'cf-connecting-ipv6')) {
            cf6 = appendLine(cf6, raw[i + 1]!);
            cf6Lines += 1;
          }
          break;
        default:
          break;
      }
    }

    // 2. The socket peer and its authority.
    const peer = input.peer;
    const peerFamily: IpFamily = peer ? parseIpInto(peer, 0, peer.length, peerWords, true) : 0;
    const peerIp = peerFamily === 0 ? (peer || 'unknown')
      : peerFamily === 4 ? peer! : formatIp(peerWords);
    const proxyPeer = peerFamily !== 0 && trustProxy && proxies.has(peerWords);
    const cdnPeer = peerFamily !== 0 && trustCdn && cdn.has(peerWords);

    const facts: RequestFacts = { peerIp, proxyPeer, cdnPeer, xff, xRealIp, cf, cf6 };

    // Rung (1) is the fall-through below: an unauthorized peer reaches none of rungs 2-4.

    // Rung (2): CDN connecting address from an authorized CDN peer.
    if (cdnPeer && cf !== null) {
      if (cfLines > 1) return build(facts, 'cdn', 'unknown', 'repeated_cf_connecting_ip');
      if (cf6Lines > 1) return build(facts, 'cdn', 'unknown', 'repeated_cf_connecting_ipv6');
      const family = parseForwarded(cf, 0, cf.length, hopWords);
      if (family === 0) return build(facts, 'cdn', 'unknown', 'cdn_header_invalid');
      if (cf6 !== null && family === 4 && inClassE(hopWords)) {
        // The primary is a CDN pseudo-IPv4: a valid IPv6 companion wins (the primary is
        // non-routable, so overwriting its words loses nothing).
        if (parseForwarded(cf6, 0, cf6.length, hopWords) === 6) {
          return routableWords(hopWords) ? build(facts, 'cdn_ipv6', formatIp(hopWords), null) : build(facts, 'cdn_ipv6', 'unknown', 'cdn_header_not_routable');
        }
        return build(facts, 'cdn', 'unknown', 'cdn_header_not_routable');
      }
      return routableWords(hopWords) ? build(facts, 'cdn', formatIp(hopWords), null) : build(facts, 'cdn', 'unknown', 'cdn_header_not_routable');
    }

    // Rung (3): X-Forwarded-For from an authorized proxy, right to left.
    if (proxyPeer && xff !== null) {
      let hops = 1;
      for (let i = xff.indexOf(','); i >= 0; i = xff.indexOf(',', i + 1)) {
        hops += 1;
        if (hops > MAX_FORWARDED_HOPS) return build(facts, 'x_forwarded_for', 'unknown', 'xff_too_many_hops');
      }
      let end = xff.length;
      for (;;) {
        const comma = end === 0 ? -1 : xff.lastIndexOf(',', end - 1);
        if (parseForwarded(xff, comma + 1, end, hopWords) === 0) return build(facts, 'x_forwarded_for', 'unknown', 'xff_hop_invalid');
        if (!trustedHops.has(hopWords)) {
          // The first untrusted hop ends provenance: never continue left.
          return routableWords(hopWords) ? build(facts, 'x_forwarded_for', formatIp(hopWords), null) : build(facts, 'x_forwarded_for', 'unknown', 'xff_hop_not_routable');
        }
        if (comma < 0) return build(facts, 'x_forwarded_for', 'unknown', 'xff_all_trusted');
        end = comma;
      }
    }

    // Rung (4): X-Real-IP from an authorized proxy, only when enabled and XFF is absent.
    if (proxyPeer && trustXRealIp && xff === null && xRealIp !== null) {
      if (xRealIpLines > 1) return build(facts, 'x_real_ip', 'unknown', 'repeated_x_real_ip');
      if (parseForwarded(xRealIp, 0, xRealIp.length, hopWords) !== 0 && routableWords(hopWords)) {
        return build(facts, 'x_real_ip', formatIp(hopWords), null);
      }
      // Not routable: the rung does not apply; fall through to the socket peer.
    }

    // Rungs (1) and (5): the socket peer.
    if (peerFamily === 0) return build(facts, 'socket', 'unknown', peer ? 'peer_invalid' : 'peer_missing');
    if (routableWords(peerWords)) return build(facts, 'socket', peerIp, null);
    if (direct.has(peerWords)) return build(facts, 'direct_client_network', peerIp, null);
    return build(facts, 'socket', 'unknown', 'peer_not_routable');
  }

  return Object.freeze({ resolve });
}
