/**
 * The public stats job (docs/public-stats.md), started once a day by the Schedule
 * `public-stats-snapshot` (overlap SKIP). One activity builds the snapshot from PostgreSQL, stores
 * it and drops all but the 30 newest; it is retried with backoff for about an hour, so a short
 * database outage delays the day's snapshot instead of losing it. A bad input fails at once.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { PublicStatsActivities } from '../activities/control/public-stats-activities';
import type { PublicStatsInput, PublicStatsResult } from './definitions/public-stats';

const jobs = proxyActivities<PublicStatsActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '30 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes', maximumAttempts: 8, nonRetryableErrorTypes: ['InvalidPublicStatsInput'] },
});

export async function publicStatsWorkflow(input: PublicStatsInput): Promise<PublicStatsResult> {
  return jobs.takePublicStatsSnapshot({ weeks: input.weeks });
}
