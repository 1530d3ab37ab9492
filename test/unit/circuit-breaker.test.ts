import assert from 'node:assert/strict';
import { CircuitBreakers, countsAgainstBreaker, type CircuitEvent } from '../../gateway/routing/breaker';
import { httpError, transportError, UpstreamError } from '../../gateway/upstream/upstream-error';

function breakers(options: { threshold?: number; minAvailability?: number; alpha?: number } = {}) {
  const clock = { now: 1_000_000 };
  const events: CircuitEvent[] = [];
  const b = new CircuitBreakers({
    failureThreshold: options.threshold ?? 3, cooldownMs: 30_000, minAvailability: options.minAvailability ?? 0,
    availabilityAlpha: options.alpha ?? 0.05, now: () => clock.now,
  });
  b.onChange((e) => events.push(e));
  return { b, clock, events };
}

function fail(b: CircuitBreakers, id: string, times: number): void {
  for (let i = 0; i < times; i += 1) {
    assert.equal(b.admit(id), 'closed');
    b.record(id, false);
  }
}

describe('circuit breaker', () => {
  it('closed → open after the threshold of consecutive failures; a success in between resets the count', () => {
    const { b, events } = breakers({ threshold: 3 });
    fail(b, 'e1', 2);
    b.record('e1', true);
    fail(b, 'e1', 2);
    assert.equal(b.snapshot('e1').state, 'closed');
    assert.equal(b.admit('e1'), 'closed');
    b.record('e1', false);
    assert.equal(b.snapshot('e1').state, 'open');
    assert.equal(b.admit('e1'), false);
    assert.equal(b.isOpen('e1'), true);
    assert.deepEqual(events.map((e) => [e.type, e.endpointId, e.reason]), [['circuit_open', 'e1', 'consecutive_failures']]);
    assert.equal(b.snapshot('e2').state, 'closed', 'breakers are per endpoint');
  });

  it('closed → open when a failure leaves the availability average below the minimum', () => {
    const { b, events } = breakers({ threshold: 100, minAvailability: 0.8, alpha: 0.1 });
    // Alternating outcomes never reach the consecutive threshold, but availability sinks toward 0.5.
    let opened = -1;
    for (let i = 0; i < 40 && opened < 0; i += 1) {
      b.admit('e1');
      b.record('e1', i % 2 === 0);
      if (b.snapshot('e1').state === 'open') opened = i;
    }
    assert.ok(opened > 0, 'opened on availability');
    assert.equal(opened % 2, 1, 'only a failure opens the circuit');
    assert.ok(b.snapshot('e1').availability < 0.8);
    assert.equal(events[0]!.reason, 'availability');
  });

  it('the availability average is an EWMA with the configured weight', () => {
    const { b } = breakers({ threshold: 100, alpha: 0.5 });
    b.admit('e1');
    b.record('e1', false);
    assert.equal(b.snapshot('e1').availability, 0.5);
    b.record('e1', false);
    assert.equal(b.snapshot('e1').availability, 0.25);
    b.record('e1', true);
    assert.equal(b.snapshot('e1').availability, 0.625);
  });

  it('open → half-open after the cooldown admits exactly one test request; others are refused while it runs', () => {
    const { b, clock, events } = breakers();
    fail(b, 'e1', 3);
    clock.now += 29_999;
    assert.equal(b.admit('e1'), false);
    assert.equal(b.admissible('e1'), false);
    clock.now += 1;
    assert.equal(b.admissible('e1'), true);
    assert.equal(b.snapshot('e1').state, 'half_open');
    assert.equal(b.admit('e1'), 'probe');
    assert.equal(b.admit('e1'), false, 'a second request while the probe is in flight');
    assert.equal(b.admit('e1'), false);
    assert.equal(b.isOpen('e1'), true, 'nowhere to go while probing');
    assert.deepEqual(events.map((e) => e.type), ['circuit_open', 'circuit_half_open']);
  });

  it('half-open: success of the test request closes the circuit (recovery event)', () => {
    const { b, clock, events } = breakers();
    fail(b, 'e1', 3);
    clock.now += 30_000;
    assert.equal(b.admit('e1'), 'probe');
    b.record('e1', true, true);
    assert.equal(b.snapshot('e1').state, 'closed');
    assert.equal(b.admit('e1'), 'closed');
    assert.equal(b.admit('e1'), 'closed');
    assert.equal(events.at(-1)!.type, 'circuit_closed');
  });

  it('half-open: failure of the test request re-opens the circuit for another cooldown', () => {
    const { b, clock, events } = breakers();
    fail(b, 'e1', 3);
    clock.now += 30_000;
    assert.equal(b.admit('e1'), 'probe');
    b.record('e1', false, true);
    assert.equal(b.snapshot('e1').state, 'open');
    assert.deepEqual(events.map((e) => e.reason ?? e.type), ['consecutive_failures', 'circuit_half_open', 'probe_failed']);
    clock.now += 29_000;
    assert.equal(b.admit('e1'), false);
    clock.now += 1_000;
    assert.equal(b.admit('e1'), 'probe');
  });

  it('an abandoned probe (client left) frees the slot without a verdict; synthetic probes never take it', () => {
    const { b, clock } = breakers();
    fail(b, 'e1', 3);
    clock.now += 30_000;
    assert.equal(b.admit('e1', false), false, 'a synthetic request may not be the test request');
    assert.equal(b.admit('e1'), 'probe');
    b.abandon('e1');
    assert.equal(b.snapshot('e1').state, 'half_open');
    assert.equal(b.admit('e1'), 'probe');
  });

  it('late outcomes of requests admitted before the circuit opened do not decide half-open', () => {
    const { b, clock } = breakers();
    assert.equal(b.admit('e1'), 'closed'); // a slow request, still in flight
    assert.equal(b.admit('e1'), 'closed'); // another
    fail(b, 'e1', 3);
    clock.now += 30_000;
    assert.equal(b.admit('e1'), 'probe');
    b.record('e1', false); // the first slow request fails late
    b.record('e1', true); // the second succeeds late
    assert.equal(b.snapshot('e1').state, 'half_open');
    assert.equal(b.snapshot('e1').probe_in_flight, true);
    b.record('e1', true, true);
    assert.equal(b.snapshot('e1').state, 'closed');
  });

  it('an upstream credential rejection marks the endpoint degraded at once; a success clears it', () => {
    const { b } = breakers();
    b.markCredentialRejected('e1');
    assert.equal(b.snapshot('e1').degraded, true);
    assert.equal(b.snapshot('e1').state, 'closed');
    b.clearCredentialRejected('e1');
    assert.equal(b.snapshot('e1').degraded, false);
  });

  it('counts connect errors, timeouts, 5xx and early stream failures; not 4xx, 401, 429, context length or permit waits', () => {
    const counted = [
      transportError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), 'headers'),
      transportError(Object.assign(new Error('slow'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'headers'),
      httpError(500, '', undefined), httpError(503, '', undefined),
      new UpstreamError('upstream closed the stream without sending data', 'stream', 502, true),
    ];
    for (const err of counted) assert.equal(countsAgainstBreaker(err), true, err.message);
    const ignored = [
      httpError(400, '{"error":{"message":"bad"}}', undefined), httpError(404, '', undefined), httpError(401, '', undefined),
      httpError(429, '', '3'), httpError(400, '{"error":{"message":"maximum context length is 10 tokens"}}', undefined),
      new UpstreamError('timed out waiting for a permit', 'concurrency', 503, true),
    ];
    for (const err of ignored) assert.equal(countsAgainstBreaker(err), false, err.message);
  });
});
