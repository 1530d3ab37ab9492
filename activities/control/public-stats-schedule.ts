/**
 * The Temporal Schedule that takes the public stats snapshot once a day (docs/public-stats.md),
 * created or brought up to date by the control worker at every start (lib/temporal.ts
 * `ensureSchedule`): a redeploy changes its definition (time, overlap, task queue, input) and
 * keeps its state (paused, note). Overlap SKIP: a run still going makes the next day's skip.
 */
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Settings } from '../../lib/settings';
import { ensureSchedule } from '../../lib/temporal';
import type { publicStatsWorkflow } from '../../workflows/public-stats';
import { PUBLIC_STATS_AT, PUBLIC_STATS_DEFAULTS, PUBLIC_STATS_WORKFLOW_TYPE, type PublicStatsInput } from '../../workflows/definitions/public-stats';

export type PublicStatsScheduleSettings = Pick<Settings, 'TEMPORAL_CONTROL_TASK_QUEUE' | 'PUBLIC_STATS_SCHEDULE_ID'>;

/** Creates the public stats Schedule, or updates an existing one to this definition; answers its id. */
export function ensurePublicStatsSchedule(client: Client, settings: PublicStatsScheduleSettings, input: PublicStatsInput = PUBLIC_STATS_DEFAULTS): Promise<string> {
  return ensureSchedule<typeof publicStatsWorkflow>(client, {
    scheduleId: settings.PUBLIC_STATS_SCHEDULE_ID,
    spec: { calendars: [{ hour: PUBLIC_STATS_AT.hour, minute: PUBLIC_STATS_AT.minute }] },
    // A day missed while the server was away is made up within 6 hours, else left to the next day.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '6 hours' },
    action: {
      type: 'startWorkflow',
      workflowType: PUBLIC_STATS_WORKFLOW_TYPE,
      // Temporal appends each run's start time: `public-stats-snapshot-2026-12-08T03:17:00Z`.
      workflowId: settings.PUBLIC_STATS_SCHEDULE_ID,
      taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
      args: [input],
    },
  });
}
