import assert from 'node:assert/strict';
import { CONCURRENCY_EXEMPT_HOSTS, ConcurrencyLimiter, PermitRefusedError, retryAfterMs } from '../../gateway/routing/concurrency';

/** A fake clock with a timer queue: `advance` fires due timers in order. */
function fakeTime() {
  const timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  const clock = {
    now: 0,
    schedule(fn: () => void, ms: number) {
      const timer = { at: clock.now + ms, fn, live: true };
      timers.push(timer);
      return () => { timer.live = false; };
    },
    advance(ms: number) {
      clock.now += ms;
      for (const t of timers.filter((x) => x.live && x.at <= clock.now).sort((x, y) => x.at - y.at)) {
        t.live = false;
        t.fn();
      }
    },
  };
  return clock;
}

function limiter(options: { initial?: number; max?: number; interval?: number; exempt?: readonly string[]; enabled?: boolean } = {}) {
  const time = fakeTime();
  const l = new ConcurrencyLimiter({
    enabled: options.enabled ?? true, initialLimit: options.initial ?? 2, maxLimit: options.max ?? 4, probeSuccessInterval: options.interval ?? 3,
    acquireTimeoutMs: 30_000, exemptHosts: options.exempt ?? CONCURRENCY_EXEMPT_HOSTS, now: () => time.now, schedule: (fn, ms) => time.schedule(fn, ms),
  });
  return { l, time };
}

/** Settles pending promise callbacks. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('adaptive outbound concurrency (AIMD)', () => {
  it('starts at the initial limit per (provider label, key); lanes are independent', () => {
    const { l } = limiter({ initial: 2 });
    const lane = l.lane('p', 'k1');
    assert.equal(l.tryAcquire(lane), true);
    assert.equal(l.tryAcquire(lane), true);
    assert.equal(l.tryAcquire(lane), false);
    assert.equal(l.tryAcquire(l.lane('p', 'k2')), true, 'another key of the provider');
    assert.equal(l.tryAcquire(l.lane('q', 'k1')), true, 'the same key under another label');
    assert.equal(l.lane('p', 'k1'), lane);
  });

  it('minus one on each 429, never below one', () => {
    const { l } = limiter({ initial: 3 });
    const lane = l.lane('p', 'k');
    for (let i = 0; i < 5; i += 1) {
      assert.equal(l.tryAcquire(lane), true);
      l.release(lane, 'rate_limited');
    }
    assert.equal(lane.limit, 1);
    assert.equal(lane.inFlight, 0);
  });

  it('plus one after every interval of successes, up to the maximum; other failures change nothing', () => {
    const { l } = limiter({ initial: 2, max: 3, interval: 3 });
    const lane = l.lane('p', 'k');
    const succeed = (n: number) => { for (let i = 0; i < n; i += 1) { l.tryAcquire(lane); l.release(lane, 'ok'); } };
    succeed(2);
    l.tryAcquire(lane);
    l.release(lane, 'other');
    assert.equal(lane.limit, 2);
    succeed(1);
    assert.equal(lane.limit, 3);
    succeed(30);
    assert.equal(lane.limit, 3, 'capped');
    l.tryAcquire(lane);
    l.release(lane, 'rate_limited');
    succeed(2);
    assert.equal(lane.limit, 2, 'a 429 restarts the success count');
    succeed(1);
    assert.equal(lane.limit, 3);
  });

  it('a waiter gets the next released permit, in order', async () => {
    const { l } = limiter({ initial: 1 });
    const lane = l.lane('p', 'k');
    await l.acquire(lane);
    const order: string[] = [];
    const first = l.acquire(lane).then(() => order.push('first'));
    const second = l.acquire(lane).then(() => order.push('second'));
    await tick();
    assert.deepEqual(order, []);
    l.release(lane, 'ok');
    await first;
    assert.deepEqual(order, ['first']);
    l.release(lane, 'ok');
    await second;
    assert.deepEqual(order, ['first', 'second']);
  });

  it('a wait longer than the acquire timeout is refused (the caller fails over)', async () => {
    const { l, time } = limiter({ initial: 1 });
    const lane = l.lane('p', 'k');
    await l.acquire(lane);
    const waiting = l.acquire(lane);
    time.advance(29_999);
    await tick();
    assert.equal(lane.waiters.length, 1);
    time.advance(1);
    await assert.rejects(waiting, (err: unknown) => err instanceof PermitRefusedError && err.reason === 'timeout');
    assert.equal(lane.waiters.length, 0);
    l.release(lane, 'ok');
    assert.equal(lane.inFlight, 0, 'the timed-out waiter took no permit');
  });

  it('a caller may wait longer than the acquire timeout (an offload queue wait), and gets the permit when one is released', async () => {
    const { l, time } = limiter({ initial: 1 });
    const lane = l.lane('p', 'k');
    await l.acquire(lane);
    const waiting = l.acquire(lane, 45_000);
    time.advance(30_000);
    await tick();
    assert.equal(lane.waiters.length, 1, 'still waiting past the acquire timeout');
    l.release(lane, 'ok');
    await waiting;
    assert.equal(lane.inFlight, 1);
    const late = l.acquire(lane, 45_000);
    time.advance(45_000);
    await assert.rejects(late, (err: unknown) => err instanceof PermitRefusedError && err.reason === 'timeout');
  });

  it('Retry-After pauses the lane until it passes; waiters fail over at once', async () => {
    const { l, time } = limiter({ initial: 2 });
    const lane = l.lane('p', 'k');
    await l.acquire(lane);
    await l.acquire(lane);
    const waiting = l.acquire(lane);
    l.release(lane, 'rate_limited', '10');
    await assert.rejects(waiting, (err: unknown) => err instanceof PermitRefusedError && err.reason === 'retry_after' && err.retryAfterMs === 10_000);
    await assert.rejects(l.acquire(lane), /retry later/);
    assert.equal(l.tryAcquire(lane), false);
    time.advance(9_999);
    assert.equal(l.tryAcquire(lane), false);
    time.advance(1);
    assert.equal(l.pausedFor(lane), 0);
    assert.equal(l.tryAcquire(lane), false, 'the limit shrank to one and one request is still out');
    l.release(lane, 'ok');
    assert.equal(l.tryAcquire(lane), true);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    assert.equal(retryAfterMs('2', 0), 2000);
    assert.equal(retryAfterMs(undefined, 0), 0);
    assert.equal(retryAfterMs('soon', 0), 0);
    assert.equal(retryAfterMs(new Date(5000).toUTCString(), 2000), 3000);
  });

  it('exempts localhost, 127.0.0.1, 0.0.0.0 and host.docker.internal; the switch turns it all off', () => {
    const { l } = limiter();
    for (const host of ['localhost', '127.0.0.1', '0.0.0.0', 'host.docker.internal', 'LOCALHOST']) assert.equal(l.applies(host), false, host);
    for (const host of ['api.example.com', '10.0.0.5', '[::1]']) assert.equal(l.applies(host), true, host);
    assert.equal(limiter({ exempt: [] }).l.applies('127.0.0.1'), true, 'tests may inject an empty list');
    assert.equal(limiter({ enabled: false }).l.applies('api.example.com'), false);
  });
});
