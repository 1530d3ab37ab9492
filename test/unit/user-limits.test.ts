/**
 * Per-user limits with a controlled clock: the daily quota resets at 00:00 UTC, exempt models
 * do not count against concurrency, callers without an account are never limited.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { UserLimits } from '../../gateway/auth/user-limits';
import type { Caller } from '../../gateway/auth/caller';

const user: Caller = { role: 'free', via: 'api_key', userId: 7 };
const response = () => new EventEmitter() as unknown as ServerResponse;

describe('user limits (unit)', () => {
  it('resets the daily quota at 00:00 UTC', () => {
    let now = Date.parse('2026-11-21T23:59:00Z');
    const limits = new UserLimits({ concurrency: 0, dailyQuotaUsd: 2, now: () => now });
    limits.spend(7, 1.25);
    limits.enter(user, 'm', response());
    limits.spend(7, 0.75);
    assert.throws(() => limits.enter(user, 'm', response()), (err: Error & { status?: number; headers?: Record<string, string> }) => err.status === 429 && err.headers?.['Retry-After'] === '60');
    now = Date.parse('2026-11-22T00:00:01Z');
    assert.equal(limits.spentToday(7), 0);
    limits.enter(user, 'm', response());
  });

  it('counts concurrency per user, skips exempt models, releases on close, ignores callers without an account', () => {
    const limits = new UserLimits({ concurrency: 1, dailyQuotaUsd: 0 });
    const first = response();
    limits.enter(user, 'm', first);
    assert.throws(() => limits.enter(user, 'm', response()), /at most 1 in flight/);
    limits.isExempt = (model) => model === 'exempt';
    limits.enter(user, 'exempt', response());
    limits.enter({ role: 'admin', via: 'auth_disabled' }, 'm', response());
    (first as unknown as EventEmitter).emit('close');
    limits.enter(user, 'm', response());
  });
});
