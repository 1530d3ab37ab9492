/**
 * The automation score (docs/automation-score.md): aggregates from PostgreSQL, finished in
 * TypeScript. Used by the gateway admin routes and the operator CLI (ops/admin/automation-score.ts).
 */
import type { Db } from '../../../lib/db';
import { emptyAggregates } from './aggregates';
import { pageAggregates, userAggregates } from './aggregates-sql';
import { automationScore, type AutomationScore } from './score';

export { bandOf, type AutomationScore, type Band } from './score';

/** The default trailing window, and the bounds of `days`. */
export const DEFAULT_WINDOW_DAYS = 30;
export const MAX_WINDOW_DAYS = 90;

/** The start of a `days`-long window ending at `now`. */
export function windowStart(now: Date, days: number): Date {
  return new Date(now.getTime() - days * 86_400_000);
}

/** One user's score (a user without rows in the window scores 0.5 with `insufficient_data`). */
export async function scoreUser(db: Db, userId: number, options: { days: number; now: Date }): Promise<AutomationScore> {
  const aggregates = await userAggregates(db, userId, windowStart(options.now, options.days));
  return automationScore(aggregates ?? emptyAggregates(userId), { days: options.days, computedAt: options.now });
}

export interface ScorePageOptions {
  days: number;
  now: Date;
  limit: number;
  /** Users with an id above this (0: from the first). */
  afterUserId: number;
  minRequests: number;
}

export interface ScorePage {
  scores: AutomationScore[];
  /** The last user id of a full page (ask again with it as the cursor), or null at the end. */
  nextAfterUserId: number | null;
}

/** The scores of a page of users with rows in the window, ordered by user id. */
export async function scorePage(db: Db, options: ScorePageOptions): Promise<ScorePage> {
  const rows = await pageAggregates(db, {
    since: windowStart(options.now, options.days), afterUserId: options.afterUserId, limit: options.limit, minRequests: options.minRequests,
  });
  const scores = rows.map((a) => automationScore(a, { days: options.days, computedAt: options.now }));
  return { scores, nextAfterUserId: rows.length === options.limit ? rows[rows.length - 1]!.userId : null };
}
