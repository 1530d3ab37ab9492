/**
 * The Temporal Schedule that runs the deletion sweep every minute with overlap SKIP (a
 * deleted-chat sweep each minute, handling one request at a time), created or
 * brought up to date by the control worker at every start: the same call on a running deployment
 * changes nothing but the definition (interval, overlap, task queue, input), and keeps its state
 * (paused, note) as an operator left it.
 */
import { ScheduleOverlapPolicy, type Client, type ScheduleOptionsStartWorkflowAction } from '@temporalio/client';
import type { Settings } from '../../lib/settings';
import { ensureSchedule } from '../../lib/temporal';
import type { deletionSweepWorkflow } from '../../workflows/deletion-sweep';
import {
  DELETION_SWEEP_DEFAULTS, DELETION_SWEEP_INTERVAL, DELETION_SWEEP_WORKFLOW_TYPE, type DeletionSweepInput,
} from '../../workflows/definitions/deletion-sweep';

export type SweepScheduleSettings = Pick<Settings, 'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_DELETION_SWEEP_SCHEDULE_ID'>;

function action(settings: SweepScheduleSettings, input: DeletionSweepInput): ScheduleOptionsStartWorkflowAction<typeof deletionSweepWorkflow> {
  return {
    type: 'startWorkflow',
    workflowType: DELETION_SWEEP_WORKFLOW_TYPE,
    // Temporal appends each run's start time: `agent-deletion-sweep-2026-11-25T01:02:00Z`.
    workflowId: settings.AGENT_DELETION_SWEEP_SCHEDULE_ID,
    taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
    args: [input],
  };
}

const spec = { intervals: [{ every: DELETION_SWEEP_INTERVAL }] };
const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' };

/** Creates the sweep's Schedule, or updates an existing one to this definition; answers its id. */
export function ensureDeletionSweepSchedule(client: Client, settings: SweepScheduleSettings, input: DeletionSweepInput = DELETION_SWEEP_DEFAULTS): Promise<string> {
  return ensureSchedule(client, { scheduleId: settings.AGENT_DELETION_SWEEP_SCHEDULE_ID, spec, policies, action: action(settings, input) });
}
