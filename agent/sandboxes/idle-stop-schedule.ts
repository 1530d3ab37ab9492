/**
 * The Temporal Schedule that runs the idle stop every minute with overlap SKIP (host setting
 * `idle_timeout_seconds`; docs/sandboxes.md "Idle stop"), created or brought up to date by the
 * control worker at every start (lib/temporal.ts `ensureSchedule`): a redeploy changes its
 * definition (interval, overlap, task queue, input) and keeps its state (paused, note). It runs
 * whatever the setting: each run reads the setting, and "never" (null) makes it a no-op, so a
 * change applies at the next minute without touching the Schedule.
 */
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Settings } from '../../lib/settings';
import { ensureSchedule } from '../../lib/temporal';
import type { idleSandboxStopWorkflow } from '../../workflows/idle-sandbox-stop';
import {
  IDLE_SANDBOX_STOP_DEFAULTS, IDLE_SANDBOX_STOP_INTERVAL, IDLE_SANDBOX_STOP_WORKFLOW_TYPE, type IdleSandboxStopInput,
} from '../../workflows/definitions/idle-sandbox-stop';

export type IdleStopScheduleSettings = Pick<Settings, 'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_IDLE_STOP_SCHEDULE_ID'>;

/** Creates the idle stop's Schedule, or updates an existing one to this definition; answers its id. */
export function ensureIdleStopSchedule(client: Client, settings: IdleStopScheduleSettings, input: IdleSandboxStopInput = IDLE_SANDBOX_STOP_DEFAULTS): Promise<string> {
  return ensureSchedule<typeof idleSandboxStopWorkflow>(client, {
    scheduleId: settings.AGENT_IDLE_STOP_SCHEDULE_ID,
    spec: { intervals: [{ every: IDLE_SANDBOX_STOP_INTERVAL }] },
    // A run still going makes the next minute skip; a minute missed while the server was away is not made up.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    action: {
      type: 'startWorkflow',
      workflowType: IDLE_SANDBOX_STOP_WORKFLOW_TYPE,
      // Temporal appends each run's start time: `agent-idle-sandbox-stop-2026-11-27T01:02:00Z`.
      workflowId: settings.AGENT_IDLE_STOP_SCHEDULE_ID,
      taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
      args: [input],
    },
  });
}
