/**
 * The blocklist's counting rules with a controlled clock: the window, the duration, exemptions,
 * unresolved clients counted by peer, listing and clearing.
 */
import assert from 'node:assert/strict';
import { AuthFailureBlocklist, blocklistSource } from '../../gateway/auth/auth-failure-blocklist';
import type { ClientIpInfo } from '../../lib/client-address/client-address';

function client(ip: string, peer = '10.0.0.1'): ClientIpInfo {
  const resolved = ip !== 'unknown';
  return Object.freeze({
    client_ip: ip, peer_ip: peer, source: resolved ? 'x_forwarded_for' : 'unresolved', resolved,
    trusted_proxy_headers: true, trusted_forwarded_headers: resolved, trusted_cloudflare_headers: false,
    x_forwarded_for: null, x_real_ip: null, cf_connecting_ip: null, cf_connecting_ipv6: null, reason: resolved ? null : 'untrusted_peer',
  } as unknown as ClientIpInfo);
}

describe('auth-failure blocklist (unit)', () => {
  let now = 1_000_000;
  const make = (exempt?: string) => new AuthFailureBlocklist({ threshold: 3, windowSec: 60, durationSec: 600, exempt, now: () => now });

  it('blocks at the threshold only when the failures fall within the window', () => {
    const list = make();
    const c = client('8.8.8.8');
    assert.equal(list.recordFailure(c), false);
    now += 50_000;
    assert.equal(list.recordFailure(c), false);
    now += 20_000; // the first failure is now 70 s old
    assert.equal(list.recordFailure(c), false, 'three failures, but not within 60 s');
    assert.equal(list.blocked(c), false);
    assert.equal(list.recordFailure(c), true, 'the last three are within 60 s');
    assert.equal(list.blocked(c), true);
  });

  it('lifts the block when the duration ends, and on clear (by address or bucket)', () => {
    const list = make();
    const c = client('2a00:1450::1');
    for (let i = 0; i < 3; i += 1) list.recordFailure(c);
    assert.equal(list.blocked(client('2a00:1450::ffff')), true, 'the same /64');
    assert.match(blocklistSource(c), /^2a00:1450:.*\/64$/);
    assert.deepEqual(list.list().map((b) => b.source), [blocklistSource(c)]);
    now += 600_001;
    assert.equal(list.blocked(c), false, 'expired');
    for (let i = 0; i < 3; i += 1) list.recordFailure(c);
    assert.equal(list.clear('2a00:1450::5'), true, 'a raw address of the bucket lifts it');
    assert.equal(list.blocked(c), false);
    assert.equal(list.clear('2a00:1450::5'), false);
  });

  it('never blocks exempt addresses or networks, and counts unresolved clients by their peer', () => {
    const list = make('203.0.113.7, 192.0.2.0/24');
    for (const ip of ['203.0.113.7', '192.0.2.55']) {
      for (let i = 0; i < 5; i += 1) assert.equal(list.recordFailure(client(ip)), false);
      assert.equal(list.blocked(client(ip)), false);
    }
    const unknownA = client('unknown', '198.51.100.1');
    for (let i = 0; i < 3; i += 1) list.recordFailure(unknownA);
    assert.equal(list.blocked(unknownA), true);
    assert.equal(list.blocked(client('unknown', '198.51.100.2')), false, 'another peer');
    assert.throws(() => make('not-an-ip'), /AUTH_FAILURE_BLOCK_EXEMPT_IPS/);
  });
});
