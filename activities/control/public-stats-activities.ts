/**
 * Control-queue activity of the public stats job (`workflows/public-stats.ts`; docs/public-stats.md):
 * a thin Temporal adapter over the job, which the control worker's composition root hands in
 * (the job reads the gateway's tables and lives in `gateway/ops/public-stats/`).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { PublicStatsResult } from '../../workflows/definitions/public-stats';

/** Takes and stores a snapshot over `weeks` whole UTC weeks. */
export type PublicStatsJob = (weeks: number) => Promise<PublicStatsResult>;

export function createPublicStatsActivities(deps: { job?: PublicStatsJob | undefined }) {
  return {
    /** Builds and stores one snapshot; a bad window or a worker without the job fails without retry. */
    async takePublicStatsSnapshot(input: { weeks: number }): Promise<PublicStatsResult> {
      if (!Number.isInteger(input.weeks) || input.weeks < 1 || input.weeks > 520) {
        throw ApplicationFailure.create({ type: 'InvalidPublicStatsInput', message: `weeks must be a whole number from 1 to 520 (got ${String(input.weeks)})`, nonRetryable: true });
      }
      if (!deps.job) {
        throw ApplicationFailure.create({ type: 'PublicStatsNotConfigured', message: 'this control worker was started without the public stats job', nonRetryable: true });
      }
      return deps.job(input.weeks);
    },
  };
}

export type PublicStatsActivities = ReturnType<typeof createPublicStatsActivities>;
