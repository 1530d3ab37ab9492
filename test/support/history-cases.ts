/**
 * The runs whose histories are recorded for replay (docs/workflow-replay.md). Each case drives
 * its workflow to the end through the project's own entry points over the agent test stack
 * (PostgreSQL, the Temporal dev server, Docker, the gateway with a fake LLM upstream, the API
 * with its Update-with-Start delivery), checks that the run is the case it is named for, and
 * returns the history fetched from Temporal. A case that did not happen as named throws, so a
 * recording never silently stores a different path through the workflow.
 */
import { Worker } from '@temporalio/worker';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { History } from './workflow-histories';
import { createHostActivities } from '../../activities/host-activities';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { newId } from '../../agent/jobs/job-store';
import { chatWorkflowId } from '../../workflows/definitions/chat';
import { DELETION_SWEEP_DEFAULTS, DELETION_SWEEP_WORKFLOW_TYPE } from '../../workflows/definitions/deletion-sweep';
import { GRANT_WORKFLOW_TYPE, grantWorkflowId, releaseGrantSignal, type GrantWorkflowResult } from '../../workflows/definitions/grant';
import { HOST_SELF_CHECK_WORKFLOW_TYPE } from '../../workflows/definitions/host-self-check';
import { sandboxGroupWorkflowId } from '../../workflows/definitions/sandbox-group';
import { hostWorkflowId } from '../../workflows/definitions/host';
import { enrollHost } from '../../agent/hosts/host-registry';
import { hostWorkflowState, hostWorkflowStatus } from './host-workflows';
import { insertJobWithTurn } from './agent-rows';
import { hostTaskQueue } from '../../workflows/definitions/task-queues';
import { titleWorkflowId } from '../../workflows/definitions/title';
import { WORKSPACE_ARCHIVE_WORKFLOW_TYPE, workspaceArchiveWorkflowId } from '../../workflows/definitions/workspace-archive';
import type { deletionSweepWorkflow } from '../../workflows/deletion-sweep';
import type { grantWorkflow } from '../../workflows/grant';
import type { hostSelfCheck } from '../../workflows/host-self-check';
import type { workspaceArchive } from '../../workflows/workspace-archive';
import { ADMIN_TOKEN } from './admin';
import { AGENT_MODEL, DISPATCH_TOKEN, ownerCall, type AgentStack } from './agent-stack';
import { insertResidency } from './agent-grants';
import { insertHost } from './agent-rows';
import { docker, TEST_DISK_ROOT } from './docker';
import { waitFor } from './wait';
import {
  activities, addTurn, cancelTurn, check, count, createChat, finishedChat, lastEventHas, turnStates, type RecordedRun,
} from './history-case-steps';
import { idleSandboxStop } from './idle-stop-history-case';
import { publishDraftPullRequest, publishUnsupportedRepo } from './publish-history-case';
import { publicStatsSnapshot } from './public-stats-history-case';

export type { RecordedRun };


/** Settings of the stack the cases need: short idle and renew periods, continue-as-new after 3 turns, titles on. */
export const RECORDING_ENV: Record<string, string> = {
  AGENT_CHAT_IDLE_SECONDS: '2',
  AGENT_CHAT_TURNS_PER_RUN: '3',
  AGENT_GRANT_RENEW_SECONDS: '2',
  AGENT_TITLE_GENERATION_ENABLED: 'true',
  AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '3',
  // The host workflow's case waits for a host to go stale; the stack's own runner beats every second.
  AGENT_HOST_STALE_SECONDS: '5',
  AGENT_HOST_DRAIN_CHECK_SECONDS: '1',
};
const TURNS_PER_RUN = 3;

async function chatOneTurn(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'List the files', 'One turn');
  const history = await finishedChat(stack, jobId);
  check(JSON.stringify(await turnStates(stack, jobId)) === '["completed"]', 'one completed turn');
  check(count(activities(history), 'runAgentTurn') === 1 && lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'one turn, then idle end');
  return [{ name: 'chat-one-turn', history }];
}

async function chatTwoTurns(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Write notes.txt', 'Two turns');
  await addTurn(stack, jobId, 'Read notes.txt back');
  const history = await finishedChat(stack, jobId);
  check(JSON.stringify(await turnStates(stack, jobId)) === '["completed","completed"]', 'two completed turns');
  check(count(activities(history), 'runAgentTurn') === 2 && lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'both turns in one run');
  return [{ name: 'chat-two-turns', history }];
}

async function chatCancelQueuedTurn(stack: AgentStack): Promise<RecordedRun[]> {
  stack.upstream.enqueue(
    { kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 2; echo slept' } },
    { kind: 'json', content: 'turn one done' },
    { kind: 'json', content: 'turn three done' },
  );
  const jobId = await createChat(stack, 'Sleep a little', 'Cancel a queued turn');
  await addTurn(stack, jobId, 'This one will be cancelled');
  await addTurn(stack, jobId, 'Then this');
  await cancelTurn(stack, jobId, 2);
  const history = await finishedChat(stack, jobId);
  check(JSON.stringify(await turnStates(stack, jobId)) === '["completed","cancelled","completed"]', 'turn 2 cancelled while queued');
  check(count(activities(history), 'admitTurn') === 2, 'the cancelled turn was never admitted');
  return [{ name: 'chat-cancel-queued-turn', history }];
}

async function chatCancelRunningTurn(stack: AgentStack): Promise<RecordedRun[]> {
  stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 300' } });
  const jobId = await createChat(stack, 'Run something long', 'Cancel the running turn');
  await waitFor(async () => (await turnStates(stack, jobId))[0] === 'running', 'turn 1 running', 60_000);
  await waitFor(() => stack.upstream.requests.some((r) => JSON.stringify(r.body).includes('Run something long')), 'the model was asked', 60_000);
  await cancelTurn(stack, jobId, 1);
  const history = await finishedChat(stack, jobId);
  check(JSON.stringify(await turnStates(stack, jobId)) === '["cancelled"]', 'the running turn cancelled');
  check((history.events ?? []).some((e) => e.activityTaskCancelRequestedEventAttributes), 'the host activity was cancelled');
  return [{ name: 'chat-cancel-running-turn', history }];
}

/** One more turn than a run takes: the first run continues as new, the second runs the last turn. */
async function chatContinueAsNew(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Turn 1', 'Continue as new');
  for (let seq = 2; seq <= TURNS_PER_RUN + 1; seq += 1) await addTurn(stack, jobId, `Turn ${seq}`);
  const continued = await finishedChat(stack, jobId);
  const firstRunId = continued.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  check(Boolean(firstRunId), 'the last run continues an earlier one');
  const first = await stack.env.client.workflow.getHandle(chatWorkflowId(jobId), firstRunId ?? undefined).fetchHistory();
  check(JSON.stringify(await turnStates(stack, jobId)) === JSON.stringify(Array(TURNS_PER_RUN + 1).fill('completed')), 'every turn completed');
  check(count(activities(first), 'runAgentTurn') === TURNS_PER_RUN && lastEventHas(first, 'workflowExecutionContinuedAsNewEventAttributes'), 'the first run continued as new after its turns');
  check(count(activities(continued), 'runAgentTurn') === 1 && lastEventHas(continued, 'workflowExecutionCompletedEventAttributes'), 'the second run ran the last turn');
  return [{ name: 'chat-continue-as-new', history: first }, { name: 'chat-continued-run', history: continued }];
}

/** A chat titled from its prompt: its title workflow generates the title with the model. */
async function titleGenerated(stack: AgentStack): Promise<RecordedRun[]> {
  stack.upstream.setDefault({ kind: 'json', content: 'Fix the flaky login test' });
  try {
    const jobId = await createChat(stack, 'please look into the login test, it fails sometimes', undefined);
    const handle = await waitFor(async () => {
      const h = stack.env.client.workflow.getHandle(titleWorkflowId(jobId));
      return (await h.describe().then(() => true, () => false)) ? h : undefined;
    }, 'the title workflow', 30_000);
    const outcome = (await handle.result()) as { kind: string };
    check(outcome.kind === 'generated', `title generated (got ${JSON.stringify(outcome)})`);
    await finishedChat(stack, jobId);
    return [{ name: 'title-generated', history: await handle.fetchHistory() }];
  } finally {
    stack.upstream.setDefault(undefined);
  }
}

/** A turn grant issued at the gateway, renewed by the workflow, then revoked on `release`; and one whose host goes stale. */
async function grants(stack: AgentStack): Promise<RecordedRun[]> {
  const client = new GatewayGrantClient({ gatewayUrl: stack.gateway.url, dispatchToken: DISPATCH_TOKEN });
  const owner = await stack.t.db('users').whereRaw('lower(email) like ?', ['owner-%']).first<{ id: string }>('id');
  const run = async (hostId: string, end: (handle: WorkflowHandle<typeof grantWorkflow>) => Promise<void>, expected: GrantWorkflowResult): Promise<History> => {
    const r = await insertResidency(stack.t.db, { ownerId: Number(owner.id), model: AGENT_MODEL, hostId });
    const grant = await client.issue({ userId: Number(owner.id), model: AGENT_MODEL, kind: 'turn', jobId: r.jobId, attemptId: r.attemptId, hostId, groupId: r.groupId, generation: r.generation, ttlSeconds: 30 });
    const handle = await stack.env.client.workflow.start<typeof grantWorkflow>(GRANT_WORKFLOW_TYPE, {
      taskQueue: stack.controlQueue, workflowId: grantWorkflowId(grant.grantId),
      args: [{ grantId: grant.grantId, attemptId: r.attemptId, hostId, groupId: r.groupId, generation: r.generation, renewEverySeconds: 1 }],
    });
    await waitFor(async () => (await handle.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes), 'a renewal', 30_000);
    await end(handle);
    const result = await handle.result();
    check(result === expected, `grant ended ${expected} (got ${result})`);
    return handle.fetchHistory();
  };
  const liveHost = `replay-grant-${stack.hostId}`;
  const staleHost = `replay-stale-${stack.hostId}`;
  // These hosts have no runner: stale, placement never picks them for a later chat's turn.
  const goStale = (hostId: string) => stack.t.db('agent_hosts').where({ host_id: hostId }).update({ last_heartbeat_at: stack.t.db.raw("now() - interval '5 minutes'") });
  try {
    const released = await run(liveHost, (handle) => handle.signal(releaseGrantSignal), 'released');
    const lost = await run(staleHost, async () => {
      await goStale(staleHost);
    }, 'residency_lost');
    check(count(activities(released), 'revokeGrant') === 1, 'the released grant was revoked');
    return [{ name: 'grant-renew-and-release', history: released }, { name: 'grant-residency-lost', history: lost }];
  } finally {
    await goStale(liveHost);
    await goStale(staleHost);
  }
}

/** Archives the retained sandbox of a finished chat: within the limit (stored), and above it (too_large). */
async function workspaceArchives(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Make a workspace', 'Workspace archive');
  await finishedChat(stack, jobId);
  const sandbox = await stack.t.db('agent_jobs as j').join('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .where({ 'j.job_id': jobId }).first<{ host_id: string; container_name: string }>('s.host_id', 's.container_name');
  const archive = async (requestId: string, maxBytes: number) => {
    const workflowId = workspaceArchiveWorkflowId(jobId, requestId);
    const result = await stack.env.client.workflow.execute<typeof workspaceArchive>(WORKSPACE_ARCHIVE_WORKFLOW_TYPE, {
      taskQueue: stack.controlQueue, workflowId,
      args: [{ jobId, hostId: sandbox.host_id, containerName: sandbox.container_name, key: `workspace-archives/${jobId}/${requestId}.tar.gz`, maxBytes }],
    });
    return { status: result.status, history: await stack.env.client.workflow.getHandle(workflowId).fetchHistory() };
  };
  const stored = await archive('replay-stored', 64 * 1024 * 1024);
  const tooLarge = await archive('replay-too-large', 1);
  check(stored.status === 'stored' && tooLarge.status === 'too_large', `archives stored and too_large (got ${stored.status}, ${tooLarge.status})`);
  return [{ name: 'workspace-archive-stored', history: stored.history }, { name: 'workspace-archive-too-large', history: tooLarge.history }];
}

/** The self-check on the stack's host, and on a host whose sandbox image is missing (fails, not retried). */
async function hostSelfChecks(stack: AgentStack): Promise<RecordedRun[]> {
  const okId = `host-self-check:${stack.hostId}`;
  const ok = await stack.env.client.workflow.execute<typeof hostSelfCheck>(HOST_SELF_CHECK_WORKFLOW_TYPE, { taskQueue: stack.controlQueue, workflowId: okId, args: [{ hostId: stack.hostId }] });
  check(ok.ok, `self-check ok (stderr: ${ok.stderr})`);

  const brokenHost = `replay-no-image-${stack.hostId}`;
  const brokenId = `host-self-check:${brokenHost}`;
  const worker = await Worker.create({
    connection: stack.env.nativeConnection, namespace: stack.env.namespace ?? 'default', taskQueue: hostTaskQueue(brokenHost),
    activities: createHostActivities({ docker: docker(), hostId: brokenHost, image: 'agent-sandbox:does-not-exist', sandboxDiskDir: TEST_DISK_ROOT }),
  });
  const failure = await worker.runUntil(stack.env.client.workflow.execute<typeof hostSelfCheck>(HOST_SELF_CHECK_WORKFLOW_TYPE, { taskQueue: stack.controlQueue, workflowId: brokenId, args: [{ hostId: brokenHost }] })
    .then(() => undefined, (err: unknown) => err));
  check(failure instanceof WorkflowFailedError, 'the self-check without an image failed');
  return [
    { name: 'host-self-check-ok', history: await stack.env.client.workflow.getHandle(okId).fetchHistory() },
    { name: 'host-self-check-image-missing', history: await stack.env.client.workflow.getHandle(brokenId).fetchHistory() },
  ];
}

/**
 * One run of a sandbox group's workflow through the API's operator routes: force delete refused
 * (the host sees the container running; the claim is released), stop idle confirmed by the host,
 * then delete without archive; the workflow ends idle.
 */
async function sandboxGroupLifecycle(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Make a sandbox', 'Sandbox lifecycle');
  await finishedChat(stack, jobId);
  const group = await stack.t.db('agent_jobs as j').join('agent_sandboxes as s', 's.group_id', 'j.group_id').where({ 'j.job_id': jobId })
    .first<{ group_id: string; container_id: string; generation: number }>('s.group_id', 's.container_id', 's.generation');
  const entry = async () => ((await (await fetch(`${stack.api.url}/admin/agent/sandboxes?state=all`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
    sandboxes: Array<{ group_id: string; state: string; last_activity_at: string }>;
  }).sandboxes.find((s) => s.group_id === group.group_id);
  const act = async (action: string, body: Record<string, unknown>, expected: number) => {
    const res = await fetch(`${stack.api.url}/admin/agent/sandboxes/${group.group_id}/${action}`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    check(res.status === expected, `${action} answered ${expected} (got ${res.status}: ${await res.text()})`);
  };
  const reviewed = { container_id: group.container_id, generation: group.generation };
  await act('force-delete', reviewed, 409);
  await act('stop', { ...reviewed, last_activity_at: (await entry())?.last_activity_at }, 202);
  await waitFor(async () => (await entry())?.state === 'stopped', 'the stop confirmed', 60_000);
  await act('delete', reviewed, 202);
  const handle = stack.env.client.workflow.getHandle(sandboxGroupWorkflowId(group.group_id));
  await handle.result();
  check((await entry())?.state === 'deleted', 'the group is deleted');
  const history = await handle.fetchHistory();
  const scheduled = activities(history);
  check(count(scheduled, 'claimSandboxAction') === 3 && count(scheduled, 'releaseSandboxAction') === 1, 'three claims, one released');
  check(count(scheduled, 'stopSandboxContainer') === 1 && count(scheduled, 'removeStoppedSandboxContainer') === 1, 'one stop, one removal, in one run');
  return [{ name: 'sandbox-group-stop-and-delete', history }];
}

/**
 * Archive and delete through the API (docs/sandboxes.md "Archives"): a stopped group is spooled, granted, uploaded,
 * verified and committed, then its container removed (cold), all in one run of `sandbox:<groupId>`.
 */
async function sandboxGroupArchive(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Make a sandbox to archive', 'Sandbox archive');
  await finishedChat(stack, jobId);
  const group = await stack.t.db('agent_jobs as j').join('agent_sandboxes as s', 's.group_id', 'j.group_id').where({ 'j.job_id': jobId })
    .first<{ group_id: string; container_id: string; generation: number; last_activity_at: Date }>('s.group_id', 's.container_id', 's.generation', 's.last_activity_at');
  const act = async (action: string, body: Record<string, unknown>) => {
    const res = await fetch(`${stack.api.url}/admin/agent/sandboxes/${group.group_id}/${action}`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    check(res.status === 202, `${action} answered 202 (got ${res.status}: ${await res.text()})`);
  };
  const state = async () => (await stack.t.db('agent_sandboxes').where({ group_id: group.group_id }).first<{ state: string }>('state')).state;
  const reviewed = { container_id: group.container_id, generation: group.generation };
  await act('stop', { ...reviewed, last_activity_at: group.last_activity_at.toISOString() });
  await waitFor(async () => (await state()) === 'stopped', 'the stop confirmed', 60_000);
  await act('archive', reviewed);
  const handle = stack.env.client.workflow.getHandle(sandboxGroupWorkflowId(group.group_id));
  await handle.result();
  check((await state()) === 'cold', 'the group is cold');
  const history = await handle.fetchHistory();
  const scheduled = activities(history);
  check(count(scheduled, 'spoolSandboxArchive') === 1 && count(scheduled, 'uploadSandboxArchive') === 1, 'one spool, one upload');
  check(count(scheduled, 'commitSandboxArchive') === 1 && count(scheduled, 'removeStoppedSandboxContainer') === 1, 'committed, then removed');
  return [{ name: 'sandbox-group-stop-and-archive', history }];
}

/**
 * One host's workflow from its first heartbeat to its removal, through the API: a raise applied
 * by the runner's confirming beats, stale when the beats stop, online at the next one, then a
 * removal that drains while a chat is placed on the host and completes once the chat is deleted.
 */
async function hostLifecycle(stack: AgentStack): Promise<RecordedRun[]> {
  const hostId = `replay-host-${stack.hostId}`.slice(0, 63);
  const { credential } = await enrollHost(stack.t.db, hostId);
  const beat = async (slotsTotal: number) => {
    const res = await fetch(`${stack.api.url}/v1/agent/hosts/${hostId}/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: JSON.stringify({ slots_total: slotsTotal, runtime: 'docker-test', runner_version: '2', capabilities: ['container'] }),
    });
    check(res.status === 200, `heartbeat answered ${res.status}`);
  };
  const admin = async (method: string, path: string, body?: unknown) => fetch(`${stack.api.url}/admin/agent/runner-hosts/${hostId}${path}`, {
    method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const state = () => hostWorkflowState(stack.env.client, hostId).catch(() => undefined);
  await beat(3);
  await waitFor(async () => (await state()) === 'online', 'the host online', 30_000);
  check((await admin('PUT', '/slots', { slots: 6 })).status === 200, 'slots saved');
  await beat(3);
  await beat(6);
  await waitFor(async () => (await hostWorkflowStatus(stack.env.client, hostId)).pendingSlots === null, 'the raise applied', 30_000);
  await waitFor(async () => (await state()) === 'stale', 'the host stale', 30_000);
  await beat(6);
  await waitFor(async () => (await state()) === 'online', 'the host online again', 30_000);
  const owner = await stack.t.db('users').whereRaw('lower(email) like ?', ['owner-%']).first<{ id: string }>('id');
  const { jobId } = await insertJobWithTurn(stack.t.db, Number(owner.id), hostId);
  await stack.t.db('agent_turns').where({ job_id: jobId }).update({ state: 'cancelled' });
  check((await admin('DELETE', '')).status === 202, 'the removal drains');
  await stack.t.db('agent_jobs').where({ job_id: jobId }).update({ deleted_at: stack.t.db.fn.now() });
  const handle = stack.env.client.workflow.getHandle(hostWorkflowId(hostId));
  check((await handle.result()) === 'removed', 'the host removed');
  const history = await handle.fetchHistory();
  const scheduled = activities(history);
  check(count(scheduled, 'saveHostSlots') === 1 && count(scheduled, 'noteHostSlotsApplied') === 1, 'one slot change, applied');
  check(count(scheduled, 'requestHostRemoval') === 1 && count(scheduled, 'finishHostRemoval') >= 1, 'a drained removal');
  check(lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'the run ends removed');
  return [{ name: 'host-slots-stale-and-drained-removal', history }];
}

/** Soft delete, then permanent deletion, through the owner routes; `requested` answers 202. */
async function deleteChatPermanently(stack: AgentStack, jobId: string): Promise<void> {
  const soft = await ownerCall(stack, 'DELETE', `/v1/agent/jobs/${jobId}`);
  check(soft.status === 200, `soft delete answered 200 (got ${soft.status}: ${await soft.text()})`);
  const permanent = await ownerCall(stack, 'DELETE', `/v1/agent/jobs/${jobId}?permanent=true`);
  check(permanent.status === 202, `permanent deletion answered 202 (got ${permanent.status}: ${await permanent.text()})`);
}

/**
 * One run of the deletion sweep with two due requests, one at a time: the last chat of a running
 * group (purged, then its container stopped and deleted through \`sandbox:<groupId>\`), and a chat
 * whose group lives on a stale host (purged, then the attempt fails and is retried later).
 */
async function deletionSweep(stack: AgentStack): Promise<RecordedRun[]> {
  const jobId = await createChat(stack, 'Make a sandbox to delete', 'Deletion sweep');
  await finishedChat(stack, jobId);
  const { group_id: groupId } = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
  await deleteChatPermanently(stack, jobId);

  const staleHost = `replay-stale-${stack.hostId}`;
  await insertHost(stack.t.db, staleHost, { heartbeatAgeSeconds: 600 });
  const staleGroup = newId('grp');
  const staleJob = newId('job');
  const owner = await stack.t.db('users').whereRaw('lower(email) = lower(?)', [`owner-${stack.hostId}@example.com`]).first<{ id: string }>('id');
  await stack.t.db('agent_sandboxes').insert({ group_id: staleGroup, host_id: staleHost, container_name: `sbx-${staleGroup}`, container_id: 'abcdef0123456789', state: 'running' });
  await stack.t.db('agent_jobs').insert({ job_id: staleJob, owner_id: owner.id, title: 'On a stale host', model: AGENT_MODEL, host_id: staleHost, group_id: staleGroup });
  await stack.t.db('agent_sandbox_members').insert({ job_id: staleJob, group_id: staleGroup, uid: 10001 });
  await deleteChatPermanently(stack, staleJob);

  const workflowId = `deletion-sweep-replay-${stack.hostId}`;
  const result = await stack.env.client.workflow.execute<typeof deletionSweepWorkflow>(DELETION_SWEEP_WORKFLOW_TYPE, {
    taskQueue: stack.controlQueue, workflowId, args: [DELETION_SWEEP_DEFAULTS],
  });
  check(result.done.length === 1 && result.failed.length === 1, `one request done, one failed (got ${JSON.stringify(result)})`);
  const groups = await stack.t.db('agent_sandboxes').whereIn('group_id', [groupId, staleGroup]).orderBy('group_id').select<Array<{ group_id: string; state: string }>>('group_id', 'state');
  check(groups.find((g) => g.group_id === groupId)?.state === 'deleted' && groups.find((g) => g.group_id === staleGroup)?.state === 'running', 'the group deleted, the stale host\'s group left');
  const history = await stack.env.client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = activities(history);
  check(count(scheduled, 'claimDueDeletion') === 3 && count(scheduled, 'purgeDeletedChat') === 2, 'three claims (the last finds none), two purges');
  check(count(scheduled, 'sendSweeperSandboxAction') === 2 && count(scheduled, 'finishDeletion') === 1 && count(scheduled, 'failDeletion') === 1, 'stop and delete sent, one done, one failed');
  return [{ name: 'deletion-sweep-stop-delete-and-retry', history }];
}

/** Every case, run one after another on one stack (the grant cases last: they enroll hosts without runners). */
export const HISTORY_CASES: ReadonlyArray<(stack: AgentStack) => Promise<RecordedRun[]>> = [
  chatOneTurn, chatTwoTurns, chatCancelQueuedTurn, chatCancelRunningTurn, chatContinueAsNew,
  titleGenerated, workspaceArchives, sandboxGroupLifecycle, sandboxGroupArchive, hostLifecycle, deletionSweep, idleSandboxStop, hostSelfChecks, publishUnsupportedRepo, publishDraftPullRequest, publicStatsSnapshot, grants,
];
