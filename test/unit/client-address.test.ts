import assert from 'node:assert/strict';
import {
  affinityKey, CLIENT_ADDRESS_VARIABLES, ClientAddressConfigError, clientIpLogFields, createClientAddressResolver,
  ipBucket, MAX_FORWARDED_HOPS, splitNetworkList,
  type ClientAddressConfig, type ClientIpInfo,
} from '../../lib/client-address/client-address';

const PROXIES = ['10.0.0.0/8', '34.1.0.0/16', '2600:1f00::/24'];
const CDN = ['173.245.48.0/20', '2400:cb00::/32'];
const DIRECT = ['192.168.0.0/16', 'fd00::/8'];

const BASE: ClientAddressConfig = Object.freeze({
  trustProxyHeaders: true,
  trustCdnHeaders: true,
  trustXRealIp: true,
  trustedProxies: PROXIES,
  cdnNetworks: CDN,
  directClientNetworks: DIRECT,
});

const OFF: ClientAddressConfig = Object.freeze({
  trustProxyHeaders: false, trustCdnHeaders: false, trustXRealIp: false,
  trustedProxies: PROXIES, cdnNetworks: CDN, directClientNetworks: DIRECT,
});

type Headers = readonly (readonly [string, string])[];

interface Case {
  name: string;
  config?: Partial<ClientAddressConfig>;
  peer: string | undefined;
  headers?: Headers;
  expect: Partial<ClientIpInfo>;
}

const flat = (headers: Headers = []): string[] => headers.flatMap(([n, v]) => [n, v]);

function resolve(c: Pick<Case, 'config' | 'peer' | 'headers'>): ClientIpInfo {
  return createClientAddressResolver({ ...BASE, ...c.config }).resolve({ peer: c.peer, rawHeaders: flat(c.headers) });
}

function runCases(cases: readonly Case[]): void {
  for (const c of cases) {
    it(c.name, () => {
      const info = resolve(c);
      const picked: Record<string, unknown> = {};
      for (const key of Object.keys(c.expect)) picked[key] = info[key as keyof ClientIpInfo];
      assert.deepEqual(picked, c.expect, JSON.stringify(info));
      assert.equal(info.resolved, info.reason === null);
      assert.equal(info.resolved, info.client_ip !== 'unknown');
    });
  }
}

const XFF = 'X-Forwarded-For';
const XRI = 'X-Real-IP';
const CF = 'CF-Connecting-IP';
const CF6 = 'CF-Connecting-IPv6';

const ok = (client_ip: string, source: ClientIpInfo['source']): Partial<ClientIpInfo> => ({ client_ip, source, resolved: true, reason: null });
const unknown = (source: ClientIpInfo['source'], reason: NonNullable<ClientIpInfo['reason']>): Partial<ClientIpInfo> =>
  ({ client_ip: 'unknown', source, resolved: false, reason });

describe('client address resolution', () => {
  describe('rung 1: the peer is not authorized, headers are ignored', () => {
    runCases([
      { name: 'routable peer outside every list: socket peer, XFF ignored', peer: '8.8.8.8', headers: [[XFF, '1.1.1.1'], [XRI, '1.1.1.1']],
        expect: { ...ok('8.8.8.8', 'socket'), trusted_proxy_headers: false, trusted_cloudflare_headers: false, trusted_forwarded_headers: false, x_forwarded_for: '1.1.1.1', x_real_ip: '1.1.1.1' } },
      { name: 'private peer outside every list: unknown', peer: '172.16.0.5', headers: [[XFF, '1.1.1.1']],
        expect: { ...unknown('socket', 'peer_not_routable'), peer_ip: '172.16.0.5', trusted_proxy_headers: false } },
      { name: 'peer in TRUSTED_DIRECT_CLIENT_NETWORKS: a client, and its XFF is still ignored', peer: '192.168.1.10', headers: [[XFF, '1.1.1.1']],
        expect: { ...ok('192.168.1.10', 'direct_client_network'), trusted_proxy_headers: false, trusted_forwarded_headers: false } },
      { name: 'IPv4-mapped routable peer: shown as the embedded IPv4', peer: '::ffff:8.8.8.8',
        expect: { ...ok('8.8.8.8', 'socket'), peer_ip: '8.8.8.8' } },
      { name: 'IPv4-mapped private peer: judged by the embedded IPv4', peer: '::ffff:172.16.0.5', expect: unknown('socket', 'peer_not_routable') },
      { name: 'IPv6 peer is shown in canonical form', peer: '2606:4700:0000:0000:0000:0000:0000:1111',
        expect: { ...ok('2606:4700::1111', 'socket'), peer_ip: '2606:4700::1111' } },
      { name: 'a link-local peer with a zone id parses, and is not routable', peer: 'fe80::1%eth0',
        expect: { ...unknown('socket', 'peer_not_routable'), peer_ip: 'fe80::1' } },
      { name: 'no peer (closed socket)', peer: undefined, headers: [[XFF, '1.1.1.1']],
        expect: { ...unknown('socket', 'peer_missing'), peer_ip: 'unknown' } },
      { name: 'unparseable peer', peer: 'garbage', expect: { ...unknown('socket', 'peer_invalid'), peer_ip: 'garbage' } },
      { name: 'all flags off: a would-be proxy peer is just a (private) socket peer', config: OFF, peer: '10.0.0.1', headers: [[XFF, '1.1.1.1']],
        expect: { ...unknown('socket', 'peer_not_routable'), trusted_proxy_headers: false } },
      { name: 'all flags off: a public would-be proxy is the client', config: OFF, peer: '34.1.2.3', headers: [[XFF, '1.1.1.1']],
        expect: ok('34.1.2.3', 'socket') },
      { name: 'CDN trust off: a CDN peer\'s CF-Connecting-IP is ignored', config: { trustCdnHeaders: false }, peer: '173.245.48.1', headers: [[CF, '1.1.1.1']],
        expect: { ...ok('173.245.48.1', 'socket'), trusted_cloudflare_headers: false, cf_connecting_ip: '1.1.1.1' } },
      { name: 'CF-Connecting-IP from a proxy (not CDN) peer is ignored', peer: '10.0.0.1', headers: [[CF, '1.1.1.1']],
        expect: { ...unknown('socket', 'peer_not_routable'), trusted_proxy_headers: true, trusted_cloudflare_headers: false } },
    ]);
  });

  describe('rung 2: CDN connecting address from an authorized CDN peer', () => {
    runCases([
      { name: 'CF-Connecting-IP from a CDN peer', peer: '173.245.48.1', headers: [[CF, '1.1.1.1']],
        expect: { ...ok('1.1.1.1', 'cdn'), trusted_cloudflare_headers: true, trusted_proxy_headers: false, trusted_forwarded_headers: true, cf_connecting_ip: '1.1.1.1' } },
      { name: 'IPv6 CDN peer and IPv6 client', peer: '2400:cb00::5', headers: [['cf-connecting-ip', '2606:4700:0:0::1']], expect: ok('2606:4700::1', 'cdn') },
      { name: 'IPv4-mapped CDN peer is authorized by the IPv4 network', peer: '::ffff:173.245.48.1', headers: [[CF, '1.1.1.1']], expect: ok('1.1.1.1', 'cdn') },
      { name: 'whitespace around the value is trimmed', peer: '173.245.48.1', headers: [[CF, ' \t1.1.1.1 ']], expect: ok('1.1.1.1', 'cdn') },
      { name: 'garbage value fails closed', peer: '173.245.48.1', headers: [[CF, 'nope']], expect: unknown('cdn', 'cdn_header_invalid') },
      { name: 'empty value fails closed', peer: '173.245.48.1', headers: [[CF, '']], expect: unknown('cdn', 'cdn_header_invalid') },
      { name: 'non-routable value fails closed', peer: '173.245.48.1', headers: [[CF, '10.1.2.3']], expect: unknown('cdn', 'cdn_header_not_routable') },
      { name: 'CF wins over XFF from the same peer', config: { trustedProxies: [...PROXIES, ...CDN] }, peer: '173.245.48.1', headers: [[XFF, '2.2.2.2'], [CF, '1.1.1.1']],
        expect: { ...ok('1.1.1.1', 'cdn'), trusted_proxy_headers: true, trusted_cloudflare_headers: true } },
      { name: 'no CF header: a CDN peer that is not a trusted proxy gets no XFF: socket peer', peer: '173.245.48.1', headers: [[XFF, '2.2.2.2']],
        expect: { ...ok('173.245.48.1', 'socket'), trusted_cloudflare_headers: true, trusted_proxy_headers: false } },
      { name: 'no CF header: a CDN peer also in TRUSTED_PROXIES gets its XFF honoured', config: { trustedProxies: [...PROXIES, ...CDN] }, peer: '173.245.48.1', headers: [[XFF, '2.2.2.2']],
        expect: ok('2.2.2.2', 'x_forwarded_for') },
      { name: 'a lone CF-Connecting-IPv6 (no primary) is ignored', peer: '173.245.48.1', headers: [[CF6, '2606:4700::1']], expect: ok('173.245.48.1', 'socket') },
      { name: 'repeated CF-Connecting-IP is rejected', peer: '173.245.48.1', headers: [[CF, '1.1.1.1'], ['cf-connecting-ip', '2.2.2.2']],
        expect: { ...unknown('cdn', 'repeated_cf_connecting_ip'), cf_connecting_ip: '1.1.1.1, 2.2.2.2' } },
      { name: 'repeated CF-Connecting-IPv6 is rejected', peer: '173.245.48.1', headers: [[CF, '1.1.1.1'], [CF6, '2606:4700::1'], [CF6, '2606:4700::2']],
        expect: { ...unknown('cdn', 'repeated_cf_connecting_ipv6'), cf_connecting_ipv6: '2606:4700::1, 2606:4700::2' } },
      { name: 'repeated CF header from an unauthorized peer is just ignored', peer: '8.8.8.8', headers: [[CF, '1.1.1.1'], [CF, '2.2.2.2']], expect: ok('8.8.8.8', 'socket') },
    ]);

    describe('IPv6 companion rule', () => {
      runCases([
        { name: '240.0.0.0/4 primary + valid IPv6 companion: IPv6 wins', peer: '173.245.48.1', headers: [[CF, '240.1.2.3'], [CF6, '2606:4700::1']],
          expect: { ...ok('2606:4700::1', 'cdn_ipv6'), cf_connecting_ip: '240.1.2.3', cf_connecting_ipv6: '2606:4700::1' } },
        { name: 'top of 240.0.0.0/4 (255.255.255.254) + companion: IPv6 wins', peer: '173.245.48.1', headers: [[CF, '255.255.255.254'], [CF6, '[2606:4700::1]']], expect: ok('2606:4700::1', 'cdn_ipv6') },
        { name: 'routable primary + companion: the primary', peer: '173.245.48.1', headers: [[CF, '1.1.1.1'], [CF6, '2606:4700::1']], expect: ok('1.1.1.1', 'cdn') },
        { name: 'IPv6 primary + companion: the primary', peer: '173.245.48.1', headers: [[CF, '2606:4700::9'], [CF6, '2606:4700::1']], expect: ok('2606:4700::9', 'cdn') },
        { name: 'primary just below 240.0.0.0/4 (multicast) + companion: the primary, not routable', peer: '173.245.48.1', headers: [[CF, '239.255.255.255'], [CF6, '2606:4700::1']],
          expect: unknown('cdn', 'cdn_header_not_routable') },
        { name: '240.0.0.0/4 primary, no companion: unknown', peer: '173.245.48.1', headers: [[CF, '240.1.2.3']], expect: unknown('cdn', 'cdn_header_not_routable') },
        { name: '240.0.0.0/4 primary, garbage companion: unknown', peer: '173.245.48.1', headers: [[CF, '240.1.2.3'], [CF6, 'garbage']], expect: unknown('cdn', 'cdn_header_not_routable') },
        { name: '240.0.0.0/4 primary, IPv4 companion (not IPv6): unknown', peer: '173.245.48.1', headers: [[CF, '240.1.2.3'], [CF6, '1.1.1.1']], expect: unknown('cdn', 'cdn_header_not_routable') },
        { name: '240.0.0.0/4 primary, non-routable IPv6 companion: unknown', peer: '173.245.48.1', headers: [[CF, '240.1.2.3'], [CF6, 'fd00::1']], expect: unknown('cdn_ipv6', 'cdn_header_not_routable') },
      ]);
    });
  });

  describe('rung 3: X-Forwarded-For from an authorized proxy, right to left', () => {
    runCases([
      { name: 'single hop', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1']],
        expect: { ...ok('1.1.1.1', 'x_forwarded_for'), trusted_proxy_headers: true, trusted_forwarded_headers: true, trusted_cloudflare_headers: false } },
      { name: 'IPv4-mapped proxy peer is authorized by the IPv4 network', peer: '::ffff:10.0.0.1', headers: [[XFF, '1.1.1.1']], expect: { ...ok('1.1.1.1', 'x_forwarded_for'), peer_ip: '10.0.0.1' } },
      { name: 'public proxy peer', peer: '34.1.2.3', headers: [[XFF, '1.1.1.1']], expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'IPv6 proxy peer', peer: '2600:1f00::5', headers: [[XFF, '2606:4700::1']], expect: ok('2606:4700::1', 'x_forwarded_for') },
      { name: 'trusted hops on the right are skipped', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, 10.0.0.2, 34.1.9.9']], expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'a trusted IPv4-mapped hop is skipped', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, ::ffff:10.0.0.2']], expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'the rightmost untrusted hop is the client; spoofed hops to its left are ignored', peer: '10.0.0.1', headers: [[XFF, '6.6.6.6, 5.5.5.5, 1.1.1.1, 10.0.0.2']],
        expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'client, spoofed-private, proxy: stops at the private hop, never continues left', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, 192.168.0.5, 10.0.0.2']],
        expect: unknown('x_forwarded_for', 'xff_hop_not_routable') },
      { name: 'a private hop in TRUSTED_DIRECT_CLIENT_NETWORKS is still not a client in XFF', peer: '10.0.0.1', headers: [[XFF, '192.168.0.5']],
        expect: unknown('x_forwarded_for', 'xff_hop_not_routable') },
      { name: 'garbage hop ends the walk: unknown', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, garbage, 10.0.0.2']], expect: unknown('x_forwarded_for', 'xff_hop_invalid') },
      { name: 'every hop trusted: unknown (a proxy is not a client)', peer: '10.0.0.1', headers: [[XFF, '10.0.0.3, 34.1.0.1']], expect: unknown('x_forwarded_for', 'xff_all_trusted') },
      { name: 'CDN hops are skipped when CDN trust is on', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, 173.245.48.9']], expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'CDN hops are ordinary (untrusted) hops when CDN trust is off', config: { trustCdnHeaders: false }, peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, 173.245.48.9']],
        expect: ok('173.245.48.9', 'x_forwarded_for') },
      { name: 'XFF wins over X-Real-IP', peer: '10.0.0.1', headers: [[XRI, '2.2.2.2'], [XFF, '1.1.1.1']], expect: ok('1.1.1.1', 'x_forwarded_for') },
      { name: 'a failed XFF walk does not fall back to X-Real-IP', peer: '10.0.0.1', headers: [[XRI, '2.2.2.2'], [XFF, '10.9.9.9']], expect: unknown('x_forwarded_for', 'xff_all_trusted') },
      { name: 'XFF disabled (all trust off) is ignored', config: OFF, peer: '34.1.2.3', headers: [[XFF, '1.1.1.1']], expect: ok('34.1.2.3', 'socket') },
      { name: 'mixed-case header name', peer: '10.0.0.1', headers: [['x-FORWARDED-for', '1.1.1.1']], expect: ok('1.1.1.1', 'x_forwarded_for') },
    ]);

    describe('repeated lines are joined in wire order', () => {
      runCases([
        { name: 'two lines: the later line is nearer to us', peer: '10.0.0.1', headers: [[XFF, '2.2.2.2'], ['x-forwarded-for', '3.3.3.3']],
          expect: { ...ok('3.3.3.3', 'x_forwarded_for'), x_forwarded_for: '2.2.2.2, 3.3.3.3' } },
        { name: 'two lines, reversed', peer: '10.0.0.1', headers: [[XFF, '3.3.3.3'], [XFF, '2.2.2.2']],
          expect: { ...ok('2.2.2.2', 'x_forwarded_for'), x_forwarded_for: '3.3.3.3, 2.2.2.2' } },
        { name: 'a trusted hop on the last line is skipped into the earlier line', peer: '10.0.0.1', headers: [[XFF, '1.1.1.1, 2.2.2.2'], ['Host', 'x'], [XFF, '10.0.0.7']],
          expect: { ...ok('2.2.2.2', 'x_forwarded_for'), x_forwarded_for: '1.1.1.1, 2.2.2.2, 10.0.0.7' } },
      ]);
    });

    describe('hop syntax', () => {
      const hop = (value: string, expect: Partial<ClientIpInfo>): Case => ({ name: JSON.stringify(value), peer: '10.0.0.1', headers: [[XFF, value]], expect });
      runCases([
        hop('1.1.1.1:5678', ok('1.1.1.1', 'x_forwarded_for')),
        hop('[2606:4700::1]:443', ok('2606:4700::1', 'x_forwarded_for')),
        hop('[2606:4700::1]', ok('2606:4700::1', 'x_forwarded_for')),
        hop('2606:4700:0000::ABCD', ok('2606:4700::abcd', 'x_forwarded_for')),
        hop('::ffff:1.1.1.1', ok('1.1.1.1', 'x_forwarded_for')),
        hop('  1.1.1.1\t,\t10.0.0.2 ', ok('1.1.1.1', 'x_forwarded_for')),
        hop('1.1.1.1,10.0.0.2', ok('1.1.1.1', 'x_forwarded_for')),
        hop('[10.0.0.2]:80', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('2606:4700::1:443', ok('2606:4700::1:443', 'x_forwarded_for')), // unbracketed IPv6 never has a port
        hop('', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('   ', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1,,10.0.0.2', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1,', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop(',1.1.1.1', ok('1.1.1.1', 'x_forwarded_for')), // the leading empty item is never reached
        hop(',10.0.0.2', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('unknown', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('"1.1.1.1"', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1:', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1:65536', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1:80:90', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('[2606:4700::1]:', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('[2606:4700::1]x', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('[2606:4700::1', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('2606:4700::1%eth0', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('01.1.1.1', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1.1', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('example.com', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('1.1.1.1 2.2.2.2', unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop(`${'1'.repeat(5000)}`, unknown('x_forwarded_for', 'xff_hop_invalid')),
        hop('127.0.0.1', unknown('x_forwarded_for', 'xff_hop_not_routable')),
        hop('::ffff:127.0.0.1', unknown('x_forwarded_for', 'xff_hop_not_routable')),
      ]);
    });

    describe(`at most ${MAX_FORWARDED_HOPS} hops`, () => {
      const chain = (hops: number, client = '1.1.1.1') =>
        [client, ...Array.from({ length: hops - 1 }, (_, i) => `10.0.${i >> 8}.${i & 255}`)].join(', ');
      runCases([
        { name: '32 hops (31 trusted): the client is found', peer: '10.0.0.1', headers: [[XFF, chain(32)]], expect: ok('1.1.1.1', 'x_forwarded_for') },
        { name: '33 hops: fails closed', peer: '10.0.0.1', headers: [[XFF, chain(33)]], expect: unknown('x_forwarded_for', 'xff_too_many_hops') },
        { name: '33 hops over several lines: fails closed', peer: '10.0.0.1', headers: [[XFF, chain(16)], [XFF, chain(17, '10.9.9.9')]],
          expect: unknown('x_forwarded_for', 'xff_too_many_hops') },
        { name: '33 hops even with an untrusted rightmost hop: fails closed', peer: '10.0.0.1', headers: [[XFF, `${chain(32)}, 2.2.2.2`]],
          expect: unknown('x_forwarded_for', 'xff_too_many_hops') },
        { name: '32 empty items count as hops too (fails on the empty rightmost)', peer: '10.0.0.1', headers: [[XFF, ','.repeat(31)]],
          expect: unknown('x_forwarded_for', 'xff_hop_invalid') },
        { name: '33 empty items: too many', peer: '10.0.0.1', headers: [[XFF, ','.repeat(32)]], expect: unknown('x_forwarded_for', 'xff_too_many_hops') },
      ]);
    });
  });

  describe('rung 4: X-Real-IP (enabled, routable, XFF completely absent)', () => {
    runCases([
      { name: 'from a proxy, no XFF', peer: '10.0.0.1', headers: [[XRI, '1.1.1.1']], expect: { ...ok('1.1.1.1', 'x_real_ip'), trusted_forwarded_headers: true, x_real_ip: '1.1.1.1' } },
      { name: 'with a port', peer: '10.0.0.1', headers: [['x-real-ip', '1.1.1.1:80']], expect: ok('1.1.1.1', 'x_real_ip') },
      { name: 'IPv6', peer: '10.0.0.1', headers: [[XRI, '2606:4700::1']], expect: ok('2606:4700::1', 'x_real_ip') },
      { name: 'disabled: ignored', config: { trustXRealIp: false }, peer: '10.0.0.1', headers: [[XRI, '1.1.1.1']], expect: unknown('socket', 'peer_not_routable') },
      { name: 'disabled, public proxy: the proxy is the socket client', config: { trustXRealIp: false }, peer: '34.1.2.3', headers: [[XRI, '1.1.1.1']], expect: ok('34.1.2.3', 'socket') },
      { name: 'XFF present (even empty): X-Real-IP is not consulted', peer: '10.0.0.1', headers: [[XFF, ''], [XRI, '1.1.1.1']], expect: unknown('x_forwarded_for', 'xff_hop_invalid') },
      { name: 'from an unauthorized peer: ignored', peer: '8.8.8.8', headers: [[XRI, '1.1.1.1']], expect: ok('8.8.8.8', 'socket') },
      { name: 'non-routable value: falls through to the (private) socket peer', peer: '10.0.0.1', headers: [[XRI, '192.168.0.9']], expect: unknown('socket', 'peer_not_routable') },
      { name: 'non-routable value: falls through to the (public) socket peer', peer: '34.1.2.3', headers: [[XRI, '192.168.0.9']], expect: ok('34.1.2.3', 'socket') },
      { name: 'garbage value: falls through to the socket peer', peer: '34.1.2.3', headers: [[XRI, 'garbage']], expect: ok('34.1.2.3', 'socket') },
      { name: 'repeated X-Real-IP is rejected', peer: '10.0.0.1', headers: [[XRI, '1.1.1.1'], ['x-real-ip', '1.1.1.1']],
        expect: { ...unknown('x_real_ip', 'repeated_x_real_ip'), x_real_ip: '1.1.1.1, 1.1.1.1' } },
      { name: 'repeated X-Real-IP is harmless when XFF decides', peer: '10.0.0.1', headers: [[XRI, '1.1.1.1'], [XRI, '2.2.2.2'], [XFF, '3.3.3.3']],
        expect: ok('3.3.3.3', 'x_forwarded_for') },
    ]);
  });

  describe('rung 5: the socket peer', () => {
    runCases([
      { name: 'private proxy peer, no headers: unknown', peer: '10.0.0.1', expect: { ...unknown('socket', 'peer_not_routable'), trusted_proxy_headers: true, trusted_forwarded_headers: false } },
      { name: 'public proxy peer, no headers: the peer', peer: '34.1.2.3', expect: { ...ok('34.1.2.3', 'socket'), trusted_proxy_headers: true } },
      { name: 'proxy peer inside TRUSTED_DIRECT_CLIENT_NETWORKS: a client', config: { trustedProxies: ['192.168.1.0/24'] }, peer: '192.168.1.1',
        expect: { ...ok('192.168.1.1', 'direct_client_network'), trusted_proxy_headers: true } },
      { name: 'IPv6 direct client network', peer: 'fd00::5', expect: ok('fd00::5', 'direct_client_network') },
      { name: 'IPv4-mapped peer in a direct client network', peer: '::ffff:192.168.1.10', expect: { ...ok('192.168.1.10', 'direct_client_network'), peer_ip: '192.168.1.10' } },
      { name: 'a private peer just outside the direct client networks: unknown', peer: '172.16.0.1', expect: unknown('socket', 'peer_not_routable') },
      { name: 'loopback peer: unknown', peer: '127.0.0.1', expect: unknown('socket', 'peer_not_routable') },
    ]);
  });

  describe('startup validation', () => {
    const fails = (config: Partial<ClientAddressConfig>, variables: string[], fragments: string[]) => () => {
      assert.throws(() => createClientAddressResolver({ ...BASE, ...config }), (error: unknown) => {
        assert.ok(error instanceof ClientAddressConfigError);
        assert.deepEqual([...error.variables].sort(), [...variables].sort());
        for (const fragment of fragments) assert.ok(error.message.includes(fragment), `${JSON.stringify(fragment)} in ${error.message}`);
        return true;
      });
    };
    const badCidrs = ['10.0.0.0/33', 'banana', '10.0.0.1/8', '10.0.0.0/08', '10.0.0.0/', '10.0.0.0/-1', '', ' ', '::/129', 'fe80::/10%eth0',
      'fe80::1%eth0', '[::1]', '10.0.0.0/8/8', '1.2.3.4:80', '10.0.0.0 /8', '2001:db8::1/32'];
    for (const entry of badCidrs) {
      it(`rejects TRUSTED_PROXIES entry ${JSON.stringify(entry)}`, fails({ trustedProxies: [...PROXIES, entry] }, ['TRUSTED_PROXIES'], ['TRUSTED_PROXIES', JSON.stringify(entry)]));
    }
    it('suggests the network when host bits are set', fails({ trustedProxies: ['10.1.2.3/8'] }, ['TRUSTED_PROXIES'], ['did you mean 10.0.0.0/8?']));
    it('rejects an invalid CIDR even when its flag is off', fails({ ...OFF, trustedProxies: ['nope'] }, ['TRUSTED_PROXIES'], ['TRUSTED_PROXIES']));
    it('rejects an invalid CDN network', fails({ cdnNetworks: ['173.245.48.0/33'] }, ['TRUSTED_CLOUDFLARE_NETWORKS'], ['TRUSTED_CLOUDFLARE_NETWORKS']));
    it('rejects an invalid direct client network', fails({ directClientNetworks: ['192.168.0.0/16', 'x'] }, ['TRUSTED_DIRECT_CLIENT_NETWORKS'], ['TRUSTED_DIRECT_CLIENT_NETWORKS']));
    it('TRUST_CDN_HEADERS=1 requires TRUST_PROXY_HEADERS=1',
      fails({ trustProxyHeaders: false, trustXRealIp: false }, ['TRUST_CDN_HEADERS'], ['TRUST_CDN_HEADERS=1 requires TRUST_PROXY_HEADERS=1']));
    it('TRUST_CDN_HEADERS=1 requires a CDN network list',
      fails({ cdnNetworks: [] }, ['TRUSTED_CLOUDFLARE_NETWORKS'], ['TRUST_CDN_HEADERS=1 requires a non-empty TRUSTED_CLOUDFLARE_NETWORKS']));
    it('TRUST_X_REAL_IP=1 requires TRUST_PROXY_HEADERS=1',
      fails({ trustProxyHeaders: false, trustCdnHeaders: false }, ['TRUST_X_REAL_IP'], ['TRUST_X_REAL_IP=1 requires TRUST_PROXY_HEADERS=1']));
    it('TRUST_X_REAL_IP=1 requires TRUSTED_PROXIES',
      fails({ trustedProxies: [] }, ['TRUSTED_PROXIES'], ['TRUST_X_REAL_IP=1 requires a non-empty TRUSTED_PROXIES']));
    it('TRUST_PROXY_HEADERS=1 alone requires TRUSTED_PROXIES',
      fails({ trustCdnHeaders: false, trustXRealIp: false, trustedProxies: [] }, ['TRUSTED_PROXIES'], ['TRUST_PROXY_HEADERS=1 requires a non-empty TRUSTED_PROXIES']));
    it('lists every problem at once', fails({ trustProxyHeaders: false, cdnNetworks: [], trustedProxies: ['x'] },
      ['TRUSTED_PROXIES', 'TRUST_CDN_HEADERS', 'TRUSTED_CLOUDFLARE_NETWORKS', 'TRUST_X_REAL_IP'], ['TRUSTED_PROXIES', 'TRUST_X_REAL_IP']));

    it('accepts a CDN-only setup (TRUST_PROXY_HEADERS=1, no proxies)', () => {
      const r = createClientAddressResolver({ ...BASE, trustXRealIp: false, trustedProxies: [] });
      assert.equal(r.resolve({ peer: '173.245.48.1', rawHeaders: [CF, '1.1.1.1'] }).client_ip, '1.1.1.1');
      assert.equal(r.resolve({ peer: '10.0.0.1', rawHeaders: [XFF, '1.1.1.1'] }).client_ip, 'unknown');
    });
    it('accepts everything off with empty lists', () => {
      const r = createClientAddressResolver({ ...OFF, trustedProxies: [], cdnNetworks: [], directClientNetworks: [] });
      assert.equal(r.resolve({ peer: '8.8.8.8', rawHeaders: [] }).client_ip, '8.8.8.8');
    });
    it('accepts bare addresses, IPv6, IPv4-mapped CIDRs and surrounding whitespace', () => {
      const r = createClientAddressResolver({ ...BASE, trustedProxies: [' 34.1.2.3 ', '2600:1f00::/24', '::ffff:10.0.0.0/104'] });
      assert.equal(r.resolve({ peer: '34.1.2.3', rawHeaders: [XFF, '1.1.1.1'] }).source, 'x_forwarded_for');
      assert.equal(r.resolve({ peer: '34.1.2.4', rawHeaders: [XFF, '1.1.1.1'] }).source, 'socket');
      assert.equal(r.resolve({ peer: '10.200.0.1', rawHeaders: [XFF, '1.1.1.1'] }).source, 'x_forwarded_for');
    });
    it('exposes the variable names', () => {
      assert.equal(CLIENT_ADDRESS_VARIABLES.trustedProxies, 'TRUSTED_PROXIES');
      assert.equal(CLIENT_ADDRESS_VARIABLES.cdnNetworks, 'TRUSTED_CLOUDFLARE_NETWORKS');
    });
    it('splits environment lists', () => {
      assert.deepEqual(splitNetworkList(undefined), []);
      assert.deepEqual(splitNetworkList(''), []);
      assert.deepEqual(splitNetworkList(' 10.0.0.0/8 ,, 2001:db8::/32 ,'), ['10.0.0.0/8', '2001:db8::/32']);
    });
  });

  describe('bucketing and affinity', () => {
    const buckets: [string, string][] = [
      ['8.8.8.8', '8.8.8.8'],
      ['10.1.2.3', '10.1.2.3'],
      ['2606:4700:1:2:3:4:5:6', '2606:4700:1:2::/64'],
      ['2606:4700:1:2::', '2606:4700:1:2::/64'],
      ['2606:4700::1', '2606:4700::/64'],
      ['2001:DB8:0:0:FFFF::1', '2001:db8::/64'],
      ['::1', '::/64'],
      ['::ffff:8.8.8.8', '8.8.8.8'],
      ['::ffff:808:808', '8.8.8.8'],
      ['unknown', 'unknown'],
      ['not an ip', 'not an ip'],
      ['', ''],
      [' 8.8.8.8', ' 8.8.8.8'],
    ];
    for (const [ip, bucket] of buckets) it(`ipBucket(${JSON.stringify(ip)}) = ${JSON.stringify(bucket)}`, () => assert.equal(ipBucket(ip), bucket));

    const v6Client = resolve({ peer: '2606:4700:1:2:3:4:5:6' });
    const unknownClient = resolve({ peer: '10.9.9.9' });
    const cases: [string, Parameters<typeof affinityKey>[0], string | undefined][] = [
      ['API-key hash first', { apiKeyHash: 'abc123', grantId: 'g1', clientIp: v6Client }, 'abc123'],
      ['then the grant', { grantId: 'g1', clientIp: v6Client }, 'grant:g1'],
      ['then the IP bucket', { clientIp: v6Client }, 'ip:2606:4700:1:2::/64'],
      ['an IPv4 client', { clientIp: resolve({ peer: '::ffff:8.8.4.4' }) }, 'ip:8.8.4.4'],
      ['empty hash and grant count as absent', { apiKeyHash: '', grantId: '', clientIp: v6Client }, 'ip:2606:4700:1:2::/64'],
      ['an unresolved address gives no key', { clientIp: unknownClient }, undefined],
      ['nothing gives no key', {}, undefined],
    ];
    for (const [name, options, key] of cases) it(`affinity key: ${name}`, () => assert.equal(affinityKey(options), key));
  });

  describe('the record', () => {
    it('is frozen, with exactly the documented fields', () => {
      const info = resolve({ peer: '10.0.0.1', headers: [[XFF, '1.1.1.1']] });
      assert.ok(Object.isFrozen(info));
      assert.equal(Reflect.set(info, 'client_ip', '6.6.6.6'), false);
      assert.equal(info.client_ip, '1.1.1.1');
      assert.deepEqual(Object.keys(info).sort(), [
        'cf_connecting_ip', 'cf_connecting_ipv6', 'client_ip', 'peer_ip', 'reason', 'resolved', 'source',
        'trusted_cloudflare_headers', 'trusted_forwarded_headers', 'trusted_proxy_headers', 'x_forwarded_for', 'x_real_ip',
      ]);
    });
    it('gives the http_request log fields, leaving out headers the request did not carry', () => {
      const info = resolve({ peer: '173.245.48.1', headers: [[CF, '240.0.0.1'], [CF6, '2606:4700::1'], [XRI, '5.5.5.5']] });
      assert.deepEqual(clientIpLogFields(info), {
        remote_ip: '2606:4700::1', peer_ip: '173.245.48.1', ip_source: 'cdn_ipv6',
        x_real_ip: '5.5.5.5', cf_connecting_ip: '240.0.0.1', cf_connecting_ipv6: '2606:4700::1',
      });
    });
    it('ignores a trailing header name without a value', () => {
      const r = createClientAddressResolver(BASE);
      assert.equal(r.resolve({ peer: '10.0.0.1', rawHeaders: [XFF, '1.1.1.1', XFF] }).client_ip, '1.1.1.1');
    });
    it('keeps no state between requests', () => {
      const r = createClientAddressResolver(BASE);
      const a = r.resolve({ peer: '10.0.0.1', rawHeaders: [XFF, '1.1.1.1'] });
      r.resolve({ peer: '2600:1f00::5', rawHeaders: [XFF, '2606:4700::1'] });
      assert.equal(a.client_ip, '1.1.1.1');
      assert.equal(r.resolve({ peer: '10.0.0.1', rawHeaders: [XFF, '1.1.1.1'] }).client_ip, '1.1.1.1');
    });
  });

});
