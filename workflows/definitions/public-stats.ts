/**
 * The public stats job's public surface (docs/public-stats.md): workflow type, the Temporal
 * Schedule that starts it once a day, its input and its result.
 */

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const PUBLIC_STATS_WORKFLOW_TYPE = 'publicStatsWorkflow';

/** When the Schedule starts the job: daily at 03:17 UTC, a quiet hour away from the full hour. */
export const PUBLIC_STATS_AT = { hour: 3, minute: 17 } as const;

export interface PublicStatsInput {
  /** Window of the snapshot in whole UTC weeks (1 to 520). */
  weeks: number;
}

/** The input the Schedule starts each run with: the default 26-week window. */
export const PUBLIC_STATS_DEFAULTS: PublicStatsInput = { weeks: 26 };

/** What one run stored. */
export interface PublicStatsResult {
  /** Id of the `public_stats_snapshots` row. */
  snapshotId: number;
  /** End of the window (ISO 8601), the Monday 00:00 UTC of the run's week. */
  windowEnd: string;
}
