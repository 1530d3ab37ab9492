/**
 * The public stats job's recorded run (docs/workflow-replay.md, docs/public-stats.md): one run
 * started as the daily Schedule starts it, on the stack's control worker, storing one snapshot.
 */
import type { publicStatsWorkflow } from '../../workflows/public-stats';
import { PUBLIC_STATS_DEFAULTS, PUBLIC_STATS_WORKFLOW_TYPE } from '../../workflows/definitions/public-stats';
import type { AgentStack } from './agent-stack';
import { activities, check, type RecordedRun } from './history-case-steps';

export async function publicStatsSnapshot(stack: AgentStack): Promise<RecordedRun[]> {
  const workflowId = `public-stats-replay-${stack.hostId}`;
  const result = await stack.env.client.workflow.execute<typeof publicStatsWorkflow>(PUBLIC_STATS_WORKFLOW_TYPE, {
    taskQueue: stack.controlQueue, workflowId, args: [PUBLIC_STATS_DEFAULTS],
  });
  const stored = await stack.t.db('public_stats_snapshots').where({ id: result.snapshotId }).first<{ window_weeks: number } | undefined>('window_weeks');
  check(stored?.window_weeks === PUBLIC_STATS_DEFAULTS.weeks, `the run stored snapshot ${result.snapshotId} over ${PUBLIC_STATS_DEFAULTS.weeks} weeks`);
  const history = await stack.env.client.workflow.getHandle(workflowId).fetchHistory();
  check(activities(history).join(',') === 'takePublicStatsSnapshot', 'one activity: the snapshot');
  return [{ name: 'public-stats-snapshot-stored', history }];
}
