/**
 * Incidents with a fake clock: opening at the threshold within the window, aggregation while
 * open, recovery after the cooldown (spike below threshold, no new block, every circuit closed),
 * suppression decided at opening and covering the recovery, floors when events were lost or a
 * distinct set hit its cap. Also the event ring (bounded, oldest overwritten and counted).
 */
import assert from 'node:assert/strict';
import { EventKind, EventRing, type AlertEvent } from '../../../../../gateway/ops/alerts/event-ring';
import { IncidentTracker, type Suppression, type Transition } from '../../../../../gateway/ops/alerts/incidents';
import { DISTINCT_CAP, Tally } from '../../../../../gateway/ops/alerts/tally';
import { BUILT_IN_RULES, type AlertRules, type AlertType } from '../../../../../gateway/ops/alerts/types';

const rules = (over: Partial<AlertRules> = {}): AlertRules => ({ ...BUILT_IN_RULES, ...over });
const failure = (at: number, source: string, address = source, prefix = 'gk_abcdef', reason = 'invalid', path = '/v1/chat/completions'): AlertEvent =>
  ({ kind: EventKind.AuthFailure, at, a: source, b: address, c: prefix, d: reason, e: path });
const block = (at: number, source: string): AlertEvent => ({ kind: EventKind.IpBlocked, at, a: source, b: source, c: undefined, d: undefined, e: undefined });
const circuit = (at: number, kind: EventKind, endpoint: string): AlertEvent => ({ kind, at, a: endpoint, b: undefined, c: undefined, d: kind === EventKind.CircuitOpen ? 'consecutive_failures' : undefined, e: undefined });
const none = (): Suppression => false;
const kinds = (ts: Transition[]) => ts.map((t) => `${t.kind}:${t.incident.type}`);

describe('alert incidents', () => {
  it('a spike opens at the threshold within the window, aggregates, and recovers once below it for the cooldown', () => {
    const t = new IncidentTracker(rules({ auth_failure_spike: { enabled: true, threshold: 3, window: 10, cooldown: 5 } }));
    t.observe([failure(0, '1.1.1.1'), failure(1000, '2.2.2.2')], 0, 1000);
    assert.deepEqual(t.evaluate(1000, none), [], 'two failures: below the threshold');
    t.observe([failure(20_000, '3.3.3.3')], 0, 20_000);
    assert.deepEqual(t.evaluate(20_000, none), [], 'the first two left the window');
    t.observe([failure(21_000, '4.4.4.4', '4.4.4.4', 'sk-zz'), failure(22_000, '3.3.3.3', '3.3.3.9', undefined, 'login_bad_password', '/auth/login')], 0, 22_000);
    const opened = t.evaluate(22_000, none);
    assert.deepEqual(kinds(opened), ['opened:auth_failure_spike']);
    const incident = opened[0]!.incident;
    assert.equal(incident.events, 3);
    assert.deepEqual(incident.sources.top(5), [['3.3.3.3', 2], ['4.4.4.4', 1]]);
    assert.equal(incident.addresses.distinct, 3);
    assert.deepEqual(incident.keyPrefixes.top(5).map(([k]) => k).sort(), ['gk_abcdef', 'sk-zz']);
    assert.deepEqual(incident.paths.top(5).map(([p]) => p).sort(), ['/auth/login', '/v1/chat/completions']);

    t.observe([failure(23_000, '5.5.5.5')], 0, 23_000);
    assert.deepEqual(t.evaluate(23_000, none), []);
    assert.equal(incident.events, 4, 'further failures aggregate into the open incident');
    // Failures count by the time they were drained (22 s: two, 23 s: one).
    assert.deepEqual(t.evaluate(31_000, none), [], 'still three failures within the last 10 s');
    assert.deepEqual(t.evaluate(33_000, none), [], 'none within the last 10 s: clear from now');
    assert.deepEqual(t.evaluate(37_000, none), [], 'clear for 4 s < cooldown 5 s');
    assert.deepEqual(kinds(t.evaluate(38_000, none)), ['recovered:auth_failure_spike']);
  });

  it('a block opens at once (threshold 1), further blocks aggregate with the failures their sources presented, and it recovers after a quiet cooldown', () => {
    const t = new IncidentTracker(rules({ auth_ip_blocked: { enabled: true, threshold: 1, window: 60, cooldown: 10 } }));
    t.observe([failure(0, '8.8.8.8', '8.8.8.8', 'gk_secret1'), failure(1, '8.8.8.8', '8.8.8.8', 'gk_secret2', 'revoked', '/v1/models'), block(2, '8.8.8.8')], 0, 1000);
    const opened = t.evaluate(1000, none);
    assert.deepEqual(kinds(opened), ['opened:auth_ip_blocked'], 'spike is off by default: only the block alerts');
    const incident = opened[0]!.incident;
    assert.deepEqual(incident.sources.top(5), [['8.8.8.8', 1]]);
    assert.deepEqual(incident.keyPrefixes.top(5).map(([k]) => k).sort(), ['gk_secret1', 'gk_secret2']);
    assert.deepEqual(incident.reasons.top(5).map(([r]) => r).sort(), ['invalid', 'revoked']);
    t.observe([block(8000, '9.9.9.9')], 0, 8000);
    assert.deepEqual(t.evaluate(8000, none), []);
    assert.equal(incident.events, 2);
    assert.deepEqual(t.evaluate(17_000, none), [], 'the second block restarted the quiet period');
    assert.deepEqual(kinds(t.evaluate(19_000, none)), ['recovered:auth_ip_blocked']);
    t.observe([block(20_000, '7.7.7.7')], 0, 20_000);
    assert.deepEqual(kinds(t.evaluate(20_000, none)), ['opened:auth_ip_blocked'], 'a new block after recovery is a new incident');
  });

  it('a circuit incident recovers only when every circuit it saw open has closed, then stayed closed for the cooldown', () => {
    const t = new IncidentTracker(rules({ circuit_open: { enabled: true, threshold: 1, window: 60, cooldown: 2 } }));
    t.observe([circuit(0, EventKind.CircuitOpen, 'ep_a'), circuit(10, EventKind.CircuitOpen, 'ep_b')], 0, 100);
    assert.deepEqual(kinds(t.evaluate(100, none)), ['opened:circuit_open']);
    t.observe([circuit(1000, EventKind.CircuitClosed, 'ep_a')], 0, 1000);
    assert.deepEqual(t.evaluate(5000, none), [], 'ep_b is still open');
    t.observe([circuit(6000, EventKind.CircuitClosed, 'ep_b')], 0, 6000);
    assert.deepEqual(t.evaluate(6000, none), []);
    t.observe([circuit(7000, EventKind.CircuitOpen, 'ep_b')], 0, 7000);
    assert.deepEqual(t.evaluate(7000, none), [], 'it flapped open again: same incident');
    t.observe([circuit(7500, EventKind.CircuitClosed, 'ep_b')], 0, 7500);
    assert.deepEqual(t.evaluate(8000, none), []);
    const recovered = t.evaluate(10_000, none);
    assert.deepEqual(kinds(recovered), ['recovered:circuit_open']);
    assert.deepEqual(recovered[0]!.incident.endpoints.top(5), [['ep_b', 2], ['ep_a', 1]]);
  });

  it('suppression is decided when an incident opens and covers its recovery; a disabled type never opens', () => {
    const t = new IncidentTracker(rules({ circuit_open: { enabled: true, threshold: 1, window: 60, cooldown: 0 }, auth_ip_blocked: { ...BUILT_IN_RULES.auth_ip_blocked, enabled: false } }));
    const muted = (type: AlertType): Suppression => (type === 'circuit_open' ? 'muted' : false);
    t.observe([circuit(0, EventKind.CircuitOpen, 'ep_a'), block(0, '8.8.8.8')], 0, 0);
    const opened = t.evaluate(0, muted);
    assert.deepEqual(kinds(opened), ['opened:circuit_open']);
    assert.equal(opened[0]!.incident.suppressed, 'muted');
    t.observe([circuit(1, EventKind.CircuitClosed, 'ep_a')], 0, 1);
    const recovered = t.evaluate(1, none);
    assert.equal(recovered[0]!.incident.suppressed, 'muted', 'unmuted since, but the incident opened while muted');
  });

  it('failures lost before aggregation still count towards the spike and make its counts floors', () => {
    const t = new IncidentTracker(rules({ auth_failure_spike: { enabled: true, threshold: 100, window: 60, cooldown: 5 } }));
    t.observe([failure(0, '1.1.1.1')], 150, 0);
    const [opened] = t.evaluate(0, none);
    assert.equal(opened!.incident.events, 151);
    assert.equal(opened!.incident.partial, true);
  });

  it('distinct sets are bounded: past the cap the count is a floor', () => {
    const tally = new Tally();
    for (let i = 0; i < DISTINCT_CAP + 20; i += 1) tally.add(`10.0.0.${i}`);
    assert.equal(tally.distinct, DISTINCT_CAP);
    assert.equal(tally.capped, true);
    assert.equal(tally.distinctLabel(), `≥ ${DISTINCT_CAP}`);
    assert.equal(tally.other, 20);
  });

  it('the event ring keeps the newest events and counts the overwritten ones', () => {
    const ring = new EventRing(4);
    for (let i = 0; i < 6; i += 1) ring.push(EventKind.AuthFailure, i, `s${i}`);
    const { events, lost } = ring.drain();
    assert.deepEqual(events.map((e) => e.a), ['s2', 's3', 's4', 's5']);
    assert.equal(lost, 2);
    assert.deepEqual(ring.drain(), { events: [], lost: 0 });
  });
});
