/**
 * Per-user limits (values chosen here: docs/identity.md "Per-user limits"), checked in
 * memory on the hot path, per process:
 * - concurrency: at most `USER_CONCURRENCY_LIMIT` requests of one user in flight (0 = unlimited),
 *   except on models exempted by the admin API;
 * - daily quota: once a user's spend since 00:00 UTC reaches `USER_DAILY_QUOTA_USD` (0 = unlimited),
 *   further requests get 429 until the next UTC day. Spend is added as requests finish and seeded
 *   from today's request log at startup.
 * Callers without an account (auth turned off) are not limited.
 */
import type { ServerResponse } from 'node:http';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { Pricing } from '../registry/types';
import { costOf } from '../request-log/cost';
import type { Usage } from '../surfaces/usage';
import type { Caller } from './caller';

export interface UserLimitOptions {
  concurrency: number;
  dailyQuotaUsd: number;
  now?: () => number;
}

const DAY_MS = 86_400_000;

export class UserLimits {
  private readonly inFlight = new Map<number, number>();
  private readonly spent = new Map<number, number>();
  private day: number;
  private readonly now: () => number;
  /** Models whose requests do not count against the concurrency limit. */
  isExempt: (modelId: string) => boolean = () => false;

  constructor(private readonly options: UserLimitOptions) {
    this.now = options.now ?? Date.now;
    this.day = Math.floor(this.now() / DAY_MS);
  }

  private rollDay(): void {
    const day = Math.floor(this.now() / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.spent.clear();
    }
  }

  /** USD spent by `userId` since 00:00 UTC (as far as this process knows). */
  spentToday(userId: number): number {
    this.rollDay();
    return this.spent.get(userId) ?? 0;
  }

  /**
   * Admits one request of `caller` on `modelId` (429 when over a limit) and, for a counted
   * request, releases its concurrency slot when `res` closes.
   */
  enter(caller: Caller, modelId: string, res: ServerResponse): void {
    const userId = caller.userId;
    if (userId === undefined) return;
    const quota = this.options.dailyQuotaUsd;
    if (quota > 0 && this.spentToday(userId) >= quota) {
      const resetSeconds = Math.ceil(((this.day + 1) * DAY_MS - this.now()) / 1000);
      throw new AppError('rate_limited', `Daily quota of ${quota} USD reached; it resets at 00:00 UTC`, { headers: { 'Retry-After': String(resetSeconds) } });
    }
    const limit = this.options.concurrency;
    if (limit === 0 || this.isExempt(modelId)) return;
    const current = this.inFlight.get(userId) ?? 0;
    if (current >= limit) {
      throw new AppError('rate_limited', `Too many concurrent requests: at most ${limit} in flight per user`, { headers: { 'Retry-After': '1' } });
    }
    this.inFlight.set(userId, current + 1);
    res.once('close', () => {
      const left = (this.inFlight.get(userId) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(userId);
      else this.inFlight.set(userId, left);
    });
  }

  /**
   * Charges a finished request to its user (only while a quota is set): the cost of its usage at
   * the answering route's pricing in force now (its `pricing_schedule`), images included.
   * Synthetic probes are charged too (billing counts them regardless).
   */
  charge(userId: number | undefined, request: { pricing?: Pricing | undefined; usage?: Usage | undefined; images?: number | undefined }): void {
    if (userId === undefined || this.options.dailyQuotaUsd === 0 || !request.pricing) return;
    const usd = costOf(request.pricing, request.usage, { at: this.now(), images: request.images });
    if (usd !== null) this.spend(userId, usd);
  }

  /** Adds a finished request's cost to its user's spend today. */
  spend(userId: number, usd: number): void {
    if (!(usd > 0)) return;
    this.rollDay();
    this.spent.set(userId, (this.spent.get(userId) ?? 0) + usd);
  }

  /** Seeds today's spend from the request log (at startup). */
  async seed(db: Db): Promise<void> {
    if (this.options.dailyQuotaUsd === 0) return;
    this.rollDay();
    const rows = await db('api_logs')
      .where('created_at', '>=', new Date(this.day * DAY_MS))
      .whereNotNull('user_id')
      .groupBy('user_id')
      .select<Array<{ user_id: string; usd: string | null }>>('user_id', db.raw('sum(cost_usd) as usd'));
    for (const row of rows) this.spent.set(Number(row.user_id), Number(row.usd ?? 0));
  }
}
