/**
 * Which addresses count as clients (the non-routable list of docs/client-address.md; IPv4-mapped IPv6 judged by the
 * embedded IPv4), how addresses are bucketed (IPv6 /64), and the affinity key order.
 */
import { CidrSet, formatIp, formatIpv6Slash64, isV4, newIpWords, parseIpInto, type IpWords } from './cidr';
import type { ClientIpInfo } from './client-address';

/** Non-routable networks. IPv4 rules also judge IPv4-mapped IPv6 by the embedded IPv4. */
export const NON_ROUTABLE_NETWORKS: readonly string[] = Object.freeze([
  // IPv4
  '0.0.0.0/32', // unspecified
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local
  '224.0.0.0/4', // multicast
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '192.0.2.0/24',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '198.18.0.0/15',
  '240.0.0.0/4',
  // IPv6
  '::/128', // unspecified
  '::1/128', // loopback
  'fe80::/10', // link-local
  'ff00::/8', // multicast
  'fc00::/7',
  '2001:db8::/32',
  '64:ff9b:1::/48',
  '100::/64',
  '100:0:0:1::/64',
  '2001:2::/48',
  '3fff::/20',
  '5f00::/16',
  'fec0::/10',
]);

const NON_ROUTABLE = CidrSet.parse(NON_ROUTABLE_NETWORKS);

/** 240.0.0.0/4 as a 32-bit prefix test: the top four bits are all set. */
export function inClassE(w: IpWords): boolean {
  return isV4(w) && w[6]! >= 0xf000;
}

export function routableWords(w: IpWords): boolean {
  return !NON_ROUTABLE.has(w);
}

/**
 * Whether `ip` (exactly one IPv4/IPv6 address, no whitespace, port or zone) is routable: false
 * for unparseable text and the non-routable ranges; IPv4-mapped IPv6 is judged by its IPv4.
 */
export function isRoutable(ip: string): boolean {
  const w = newIpWords();
  return parseIpInto(ip, 0, ip.length, w) !== 0 && routableWords(w);
}

/**
 * The rate/affinity bucket of an address: IPv6 folds to its /64 (`2001:db8:1:2::/64`), IPv4
 * stays as it is, IPv4-mapped IPv6 becomes the embedded IPv4, unparseable text (e.g.
 * `unknown`) is returned unchanged.
 */
export function ipBucket(ip: string): string {
  const w = newIpWords();
  const family = parseIpInto(ip, 0, ip.length, w);
  if (family === 0) return ip;
  if (family === 4) return ip;
  return isV4(w) ? formatIp(w) : formatIpv6Slash64(w);
}

/**
 * The upstream affinity key: the API-key hash, else `grant:<grant_id>`, else
 * `ip:<bucket>` of a resolved client address; undefined when none applies (an unresolved
 * address is not a key: all unknown clients would share one bucket). Empty strings count as absent.
 */
export function affinityKey(options: { apiKeyHash?: string; grantId?: string; clientIp?: ClientIpInfo }): string | undefined {
  if (options.apiKeyHash) return options.apiKeyHash;
  if (options.grantId) return `grant:${options.grantId}`;
  const info = options.clientIp;
  if (info && info.resolved) return `ip:${ipBucket(info.client_ip)}`;
  return undefined;
}
