/**
 * Address classes of docs/client-address.md (every non-routable range, IPv4-mapped IPv6) and the address
 * parsers checked against node:net.
 */
import assert from 'node:assert/strict';
import { BlockList, isIP } from 'node:net';
import { isRoutable, NON_ROUTABLE_NETWORKS } from '../../lib/client-address/ip-routability';
import { CidrSet, formatIp, isV4, newIpWords, parseCidr, parseIpInto } from '../../lib/client-address/cidr';

describe('address classes', () => {
  describe('non-routable ranges', () => {
    // [address, routable]
    const table: [string, boolean][] = [
      // unspecified
      ['0.0.0.0', false], ['::', false], ['0.0.0.1', true],
      // loopback
      ['127.0.0.1', false], ['127.255.255.255', false], ['126.255.255.255', true], ['128.0.0.0', true], ['::1', false], ['::2', true],
      // link-local
      ['169.254.0.1', false], ['169.254.255.255', false], ['169.253.255.255', true], ['169.255.0.0', true],
      ['fe80::1', false], ['febf:ffff::1', false], ['fe7f:ffff::1', true],
      // multicast
      ['224.0.0.1', false], ['239.255.255.255', false], ['223.255.255.255', true], ['ff02::1', false], ['ff00::', false],
      // RFC 1918, CGNAT, documentation, benchmarking, reserved
      ['10.0.0.0', false], ['10.255.255.255', false], ['9.255.255.255', true], ['11.0.0.0', true],
      ['172.16.0.0', false], ['172.31.255.255', false], ['172.15.255.255', true], ['172.32.0.0', true],
      ['192.168.0.0', false], ['192.168.255.255', false], ['192.167.255.255', true], ['192.169.0.0', true],
      ['100.64.0.0', false], ['100.127.255.255', false], ['100.63.255.255', true], ['100.128.0.0', true],
      ['192.0.2.0', false], ['192.0.2.255', false], ['192.0.1.255', true], ['192.0.3.0', true],
      ['198.51.100.0', false], ['198.51.100.255', false], ['198.51.99.255', true], ['198.51.101.0', true],
      ['203.0.113.0', false], ['203.0.113.255', false], ['203.0.112.255', true], ['203.0.114.0', true],
      ['198.18.0.0', false], ['198.19.255.255', false], ['198.17.255.255', true], ['198.20.0.0', true],
      ['240.0.0.0', false], ['255.255.255.255', false],
      // IPv6 ranges
      ['fc00::', false], ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false], ['fbff:ffff::1', true], ['fe00::1', true],
      ['2001:db8::', false], ['2001:db8:ffff:ffff::1', false], ['2001:db7:ffff::1', true], ['2001:db9::', true],
      ['64:ff9b:1::', false], ['64:ff9b:1:ffff::1', false], ['64:ff9b:0:ffff::1', true], ['64:ff9b:2::', true], ['64:ff9b::808:808', true],
      ['100::', false], ['100::ffff:ffff:ffff:ffff', false], ['100:0:0:2::', true], ['ff::ffff', true],
      ['100:0:0:1::', false], ['100:0:0:1:ffff:ffff:ffff:ffff', false],
      ['2001:2::', false], ['2001:2:0:ffff::1', false], ['2001:2:1::', true], ['2001:1:ffff::1', true],
      ['3fff::', false], ['3fff:fff:ffff::1', false], ['3fff:1000::', true], ['3ffe:ffff::1', true],
      ['5f00::', false], ['5f00:ffff::1', false], ['5eff:ffff::1', true], ['5f01::', true],
      ['fec0::', false], ['feff:ffff::1', false],
      // IPv4-mapped IPv6: the embedded IPv4 decides
      ['::ffff:10.0.0.1', false], ['::ffff:127.0.0.1', false], ['::ffff:0.0.0.0', false], ['::ffff:240.0.0.1', false],
      ['::FFFF:198.51.100.1', false], ['::ffff:a00:1', false], ['0:0:0:0:0:ffff:0808:0808', true], ['::ffff:8.8.8.8', true],
      // routable
      ['8.8.8.8', true], ['1.1.1.1', true], ['2606:4700::1111', true], ['2001:4860:4860::8888', true],
      // unparseable
      ['', false], ['unknown', false], ['1.2.3', false], ['01.2.3.4', false], [' 8.8.8.8', false], ['8.8.8.8:80', false],
      ['[2606:4700::1]', false], ['2606:4700::1%eth0', false], ['example.com', false], ['1::2::3', false], ['1:2:3:4:5:6:7:8:9', false],
    ];
    for (const [ip, routable] of table) {
      it(`${JSON.stringify(ip)} is ${routable ? '' : 'not '}routable`, () => assert.equal(isRoutable(ip), routable));
    }
    it('covers every listed network with a non-routable case', () => {
      for (const network of NON_ROUTABLE_NETWORKS) {
        const set = CidrSet.parse([network]);
        const hit = table.some(([ip, routable]) => {
          const w = newIpWords();
          return !routable && parseIpInto(ip, 0, ip.length, w) !== 0 && set.has(w);
        });
        assert.ok(hit, network);
      }
    });
  });

  describe('parsers against node:net (differential, seeded)', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    const hex = () => rand(0x10000).toString(16);
    const randomV6 = () => {
      const groups = Array.from({ length: 8 }, () => (rand(3) === 0 ? '0' : hex()));
      const text = groups.join(':');
      return rand(2) === 0 ? text : (new URL(`http://[${text}]`).hostname.slice(1, -1));
    };
    const randomV4 = () => `${rand(256)}.${rand(256)}.${rand(256)}.${rand(256)}`;

    it('parseIpInto accepts exactly what net.isIP accepts', () => {
      const alphabet = '0123456789abcdefABCDEF:.%x ';
      const seeds = ['::', '::1', '1.2.3.4', '::ffff:1.2.3.4', '2001:db8::1', '1:2:3:4:5:6:7:8', 'fe80::1%eth0', '1::', '::1.2.3.4'];
      const w = newIpWords();
      for (let i = 0; i < 30_000; i += 1) {
        let s: string;
        if (i % 3 === 0) {
          s = Array.from({ length: 1 + rand(20) }, () => alphabet[rand(alphabet.length)]).join('');
        } else {
          const chars = [...(i % 3 === 1 ? seeds[rand(seeds.length)]! : (rand(2) ? randomV6() : randomV4()))];
          for (let m = rand(3); m > 0; m -= 1) {
            const at = rand(chars.length + 1);
            const op = rand(3);
            if (op === 0) chars.splice(at, 1);
            else if (op === 1) chars.splice(at, 0, alphabet[rand(alphabet.length)]!);
            else chars[at] = alphabet[rand(alphabet.length)]!;
          }
          s = chars.join('');
        }
        const mine = parseIpInto(s, 0, s.length, w, true);
        assert.equal(mine, isIP(s), JSON.stringify(s));
      }
    });

    it('formats IPv6 like the WHATWG URL serializer (RFC 5952) and IPv4-mapped as IPv4', () => {
      const w = newIpWords();
      for (let i = 0; i < 5_000; i += 1) {
        const s = randomV6();
        assert.notEqual(parseIpInto(s, 0, s.length, w), 0, s);
        const expected = isV4(w) ? null : new URL(`http://[${s}]`).hostname.slice(1, -1);
        if (expected !== null) assert.equal(formatIp(w), expected, s);
      }
      const s = '0:0:0:0:0:FFFF:0102:0304';
      parseIpInto(s, 0, s.length, w);
      assert.equal(formatIp(w), '1.2.3.4');
    });

    it('CidrSet matches like net.BlockList', () => {
      for (let round = 0; round < 200; round += 1) {
        const v6 = rand(2) === 0;
        const base = v6 ? randomV6() : randomV4();
        const prefix = v6 ? rand(129) : rand(33);
        const words = newIpWords();
        parseIpInto(base, 0, base.length, words);
        // Zero the host bits through the parser's own error message is not possible: build the network by masking.
        const bits = v6 ? prefix : prefix + 96;
        for (let bit = bits; bit < 128; bit += 1) words[bit >> 4]! &= ~(1 << (15 - (bit & 15)));
        const network = `${formatIp(words)}/${prefix}`;
        const set = CidrSet.parse([network]);
        const list = new BlockList();
        list.addSubnet(formatIp(words), prefix, v6 ? 'ipv6' : 'ipv4');
        assert.equal(parseCidr(network).text, network);
        for (let probe = 0; probe < 50; probe += 1) {
          const w = newIpWords();
          // Probes near the network (same leading words) and random ones.
          const ip = rand(2) === 0 ? formatIp(words).replace(/[0-9a-f]+$/, rand(256).toString(v6 ? 16 : 10)) : (rand(2) ? randomV6() : randomV4());
          if (parseIpInto(ip, 0, ip.length, w) === 0) continue;
          const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
          assert.equal(set.has(w), list.check(ip, family), `${ip} in ${network}`);
        }
      }
    });

    it('an IPv6 network covering the mapped space matches IPv4 addresses, an IPv4 one never matches plain IPv6', () => {
      const w = newIpWords();
      const all6 = CidrSet.parse(['::/0']);
      const all4 = CidrSet.parse(['0.0.0.0/0']);
      parseIpInto('8.8.8.8', 0, 7, w);
      assert.equal(all6.has(w), true);
      assert.equal(all4.has(w), true);
      parseIpInto('2606:4700::1', 0, 12, w);
      assert.equal(all6.has(w), true);
      assert.equal(all4.has(w), false);
    });
  });
});
