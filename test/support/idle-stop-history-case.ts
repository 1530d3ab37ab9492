/**
 * The recorded-history case of the idle stop (docs/workflow-replay.md, docs/sandboxes.md "Idle
 * stop"): a chat's group left idle past `idle_timeout_seconds` (saved through the API; its last
 * activity moved two hours back) is found by one run of `idleSandboxStopWorkflow` and stopped
 * through `sandbox:<groupId>` as the idle stopper.
 */
import type { idleSandboxStopWorkflow } from '../../workflows/idle-sandbox-stop';
import { IDLE_SANDBOX_STOP_DEFAULTS, IDLE_SANDBOX_STOP_WORKFLOW_TYPE } from '../../workflows/definitions/idle-sandbox-stop';
import { ADMIN_TOKEN } from './admin';
import type { AgentStack } from './agent-stack';
import { activities, check, count, createChat, finishedChat, lastEventHas, type RecordedRun } from './history-case-steps';
import { waitFor } from './wait';

async function saveIdleTimeout(stack: AgentStack, seconds: number | null): Promise<void> {
  const res = await fetch(`${stack.api.url}/admin/agent/host-settings`, {
    method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ settings: { idle_timeout_seconds: seconds } }),
  });
  check(res.status === 200, `saving idle_timeout_seconds answered 200 (got ${res.status}: ${await res.text()})`);
}

export async function idleSandboxStop(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Make a sandbox to leave idle', 'Idle stop');
  await finishedChat(stack, jobId);
  const { group_id: groupId } = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
  await stack.t.db('agent_sandboxes').where({ group_id: groupId }).update({ last_activity_at: stack.t.db.raw(`now() - interval '2 hours'`) });
  await saveIdleTimeout(stack, 3600);
  try {
    const workflowId = `idle-sandbox-stop-replay-${stack.hostId}`;
    const result = await stack.env.client.workflow.execute<typeof idleSandboxStopWorkflow>(IDLE_SANDBOX_STOP_WORKFLOW_TYPE, {
      taskQueue: stack.controlQueue, workflowId, args: [IDLE_SANDBOX_STOP_DEFAULTS],
    });
    check(result.idleTimeoutSeconds === 3600 && JSON.stringify(result.stopped) === JSON.stringify([groupId]), `the idle group stopped, alone (got ${JSON.stringify(result)})`);
    await waitFor(async () => (await stack.t.db('agent_sandboxes').where({ group_id: groupId }).first<{ state: string }>('state')).state === 'stopped', 'the group stopped', 60_000);
    const history = await stack.env.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = activities(history);
    check(count(scheduled, 'findIdleSandboxes') === 1 && count(scheduled, 'stopIdleSandbox') === 1, 'one search, one stop sent');
    check(lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'the run completed');
    return [{ name: 'idle-sandbox-stop-one-group', history }];
  } finally {
    await saveIdleTimeout(stack, null);
  }
}
