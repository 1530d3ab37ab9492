/**
 * `chat:<jobId>`: runs a chat's turns strictly in `seq` order (one turn at a time per chat). Turns
 * arrive by Update-with-Start (`submitTurn`); the workflow never trusts its own memory about which
 * turn is next: it asks PostgreSQL (`nextTurn`) for the lowest-numbered turn that is not terminal,
 * and the admission activity re-checks, in one transaction, that every earlier turn is terminal
 * before it claims a host slot. A cancelled queued turn is simply skipped there, so a later turn
 * can never overtake it. A running turn is stopped by cancelling its host activity and waiting for
 * the host to confirm, so two turns of one chat never run at once. History is bounded by
 * continue-as-new.
 */
import {
  ActivityCancellationType, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, proxyActivities, setHandler, startChild, upsertMemo, upsertSearchAttributes, workflowInfo,
  allHandlersFinished, patched, ParentClosePolicy, WorkflowIdReusePolicy, type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { ChatActivities, AdmittedTurn, TurnOutcome } from '../activities/control/chat-activities';
import {
  cancelTurnSignal, chatStatusQuery, OWNER_FACING_FAILURE_TYPES, submitTurnUpdate, unexplainedTurnFailure, wakeSignal, type ChatInput, type SubmittedTurn, type WakeInput,
} from './definitions/chat';
import type { HostActivities } from '../activities/host-activities';
import { PERMANENT_SANDBOX_FAILURES } from './definitions/failures';
import { grantWorkflowId, releaseGrantSignal } from './definitions/grant';
import { searchAttributes } from './definitions/search-attributes';
import { hostTaskQueue } from './definitions/task-queues';
import { titleWorkflowId } from './definitions/title';
import { grantWorkflow } from './grant';
import { titleWorkflow } from './title';

const control = proxyActivities<ChatActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** Marks histories whose admission a wake signal interrupts (older runs replay without it). */
const ADMISSION_WAKES_PATCH = 'admission-wakes';
/** Marks histories where a `recheck` wake (the reconciler's) no longer interrupts a waiting admission. */
const RECHECK_WAKES_PATCH = 'admission-wakes-skip-recheck';

/**
 * Waits for a free slot: `NoFreeSlot` failures retry without growing history, every few seconds
 * at most (`admissionRetrySeconds`; a retry policy is not part of the recorded commands, so older
 * histories replay whatever it is).
 */
function admissionActivities(config: ChatInput['config']): ChatActivities {
  return proxyActivities<ChatActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '500 milliseconds', backoffCoefficient: 1.5, maximumInterval: `${config.admissionRetrySeconds ?? 3} seconds` },
  });
}

export async function chatWorkflow(input: ChatInput): Promise<void> {
  let wake = false;
  let running: { seq: number; scope: CancellationScope } | undefined;
  const cancelRequests = new Set<number>();
  let turnsRun = 0;
  // Counts wake signals: a host's claim that admitted this chat's turn wakes it (docs/agent-hosts.md
  // "The claim queue"). `urgentWakes` leaves out the reconciler's rechecks, which must not cancel a
  // waiting admission (that would add history and restart its back-off every reconciliation).
  let wakes = 0;
  let urgentWakes = 0;

  setHandler(submitTurnUpdate, (turn) => {
    wake = true;
    return { turn_id: turn.turnId, seq: turn.seq, state: 'queued' };
  }, {
    validator: (turn: SubmittedTurn) => {
      if (!Number.isInteger(turn.seq) || turn.seq < 1 || typeof turn.turnId !== 'string') throw new Error('invalid turn');
    },
  });
  setHandler(wakeSignal, (why?: WakeInput) => {
    wake = true;
    wakes += 1;
    if (why?.recheck !== true) urgentWakes += 1;
  });
  setHandler(cancelTurnSignal, ({ seq }) => {
    wake = true;
    if (running?.seq === seq) running.scope.cancel();
    else cancelRequests.add(seq);
  });
  setHandler(chatStatusQuery, () => ({ runningSeq: running?.seq ?? null, turnsRun }));

  upsertSearchAttributes([
    { key: searchAttributes.owner, value: String(input.ownerId) },
    { key: searchAttributes.state, value: 'idle' },
  ]);
  upsertMemo({ jobId: input.jobId, owner: input.ownerId });
  startTitleGeneration(input);

  for (;;) {
    // Between turns nothing is in flight and PostgreSQL holds every turn, so a new run can take
    // over here at any time: this bounds the history however busy the chat is.
    if (turnsRun >= input.config.turnsPerRun || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof chatWorkflow>(input);
    }
    wake = false;
    const next = await control.nextTurn({ jobId: input.jobId });
    if (!next) {
      upsertSearchAttributes([{ key: searchAttributes.state, value: 'idle' }]);
      const woke = await condition(() => wake, `${input.config.idleSeconds} seconds`);
      if (!woke) {
        await condition(allHandlersFinished);
        // A turn that arrived while the handlers finished keeps the workflow going.
        if (!wake) return;
      }
      continue;
    }
    if (next.state === 'running' && next.claimed !== true) {
      // A turn left running by an earlier run of this workflow (terminated or reset): its host
      // activity is gone with that run, so the attempt is fenced off and the turn fails cleanly.
      await control.abandonTurn({ jobId: input.jobId, seq: next.seq, reason: 'The chat workflow restarted while this turn was running' });
      continue;
    }
    turnsRun += 1;
    await runTurn(input, next.seq, { all: () => wakes, urgent: () => urgentWakes }, (scope) => {
      running = { seq: next.seq, scope };
      if (cancelRequests.delete(next.seq)) scope.cancel();
    });
    running = undefined;
  }
}

/** Wake signals received: all of them, and those that interrupt a waiting admission (not `recheck`). */
interface WakeCounts { all: () => number; urgent: () => number }

async function runTurn(input: ChatInput, seq: number, wakes: WakeCounts, onScope: (scope: CancellationScope) => void): Promise<void> {
  const admitted = await admit(admissionActivities(input.config), input.jobId, seq, wakes);
  if (admitted.kind !== 'admitted') return;
  upsertSearchAttributes([
    { key: searchAttributes.state, value: 'running' },
    { key: searchAttributes.host, value: admitted.hostId },
  ]);
  upsertMemo({ runningTurn: seq, attempt: admitted.attemptId });
  const grant = await startGrant(input, admitted);
  let outcome: TurnOutcome;
  const scope = new CancellationScope();
  onScope(scope);
  try {
    const result = await scope.run(() => runOnHost(input, admitted));
    outcome = { kind: 'completed', result: result.result };
  } catch (err) {
    outcome = outcomeOfFailure(err);
  }
  await control.finishTurn({ attemptId: admitted.attemptId, outcome });
  await grant.signal(releaseGrantSignal).catch(() => undefined);
  upsertMemo({ runningTurn: null, attempt: null });
  if (outcome.kind === 'lost') {
    // The host runner vanished mid-turn: make sure nothing of that attempt keeps running.
    await fenceOnHost(admitted).catch(() => undefined);
  }
}

/**
 * Admission of turn `seq`. While it waits for a slot (the activity retrying `NoFreeSlot`), a wake
 * signal (sent by a host that claimed the turn) cancels the waiting call and asks again at once,
 * so a claimed turn is dispatched without waiting out the retry timer. An answer lost to the
 * cancellation is not lost: the next call takes the same admission (it is recorded for this run).
 */
function admit(admission: ChatActivities, jobId: string, seq: number, wakes: WakeCounts): ReturnType<ChatActivities['admitTurn']> {
  // Not wrapped in another async function: older histories order their commands by this exact await.
  if (!patched(ADMISSION_WAKES_PATCH)) return admission.admitTurn({ jobId, seq });
  // Histories recorded before rechecks existed were interrupted by every wake.
  return admitUntilAnswered(admission, jobId, seq, patched(RECHECK_WAKES_PATCH) ? wakes.urgent : wakes.all);
}

async function admitUntilAnswered(admission: ChatActivities, jobId: string, seq: number, wakes: () => number): ReturnType<ChatActivities['admitTurn']> {
  for (;;) {
    const seen = wakes();
    const scope = new CancellationScope();
    const call = scope.run(() => admission.admitTurn({ jobId, seq }));
    const first = await Promise.race([call.then(() => 'answered' as const, () => 'answered' as const), condition(() => wakes() !== seen).then(() => 'woken' as const)]);
    if (first === 'answered') return call;
    scope.cancel();
    try {
      return await call;
    } catch (err) {
      if (!isCancellation(err)) throw err;
    }
  }
}

/**
 * Starts `title:<jobId>` in the first run of a chat workflow, without waiting for it: the title
 * workflow checks that the title is still prompt-derived; a chat whose title workflow ran before
 * is refused by the id reuse policy (and by its used title grant), which is ignored here.
 */
function startTitleGeneration(input: ChatInput): void {
  if (input.config.generateTitles !== true || workflowInfo().continuedFromExecutionRunId !== undefined) return;
  void startChild(titleWorkflow, {
    workflowId: titleWorkflowId(input.jobId),
    parentClosePolicy: ParentClosePolicy.ABANDON,
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    args: [{ jobId: input.jobId }],
  }).catch(() => undefined);
}

async function startGrant(input: ChatInput, admitted: AdmittedTurn): Promise<ChildWorkflowHandle<typeof grantWorkflow>> {
  const grantId = `grant_${admitted.attemptId}`;
  return startChild(grantWorkflow, {
    workflowId: grantWorkflowId(grantId),
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    args: [{
      grantId, attemptId: admitted.attemptId, hostId: admitted.hostId,
      groupId: admitted.groupId, generation: admitted.generation, renewEverySeconds: input.config.grantRenewSeconds,
    }],
  });
}

async function runOnHost(input: ChatInput, admitted: AdmittedTurn): Promise<{ result: string }> {
  // The limits recorded at admission (host settings); a turn admitted before them has none.
  const limits = admitted.limits;
  const host = proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(admitted.hostId),
    scheduleToStartTimeout: '5 minutes',
    startToCloseTimeout: `${(limits?.turnTimeLimitSeconds ?? input.config.turnTimeLimitSeconds) + 60} seconds`,
    heartbeatTimeout: `${input.config.heartbeatTimeoutSeconds} seconds`,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    // A turn is not idempotent: a lost host fails it cleanly instead of running it twice.
    retry: { maximumAttempts: 1 },
  });
  const prepare = proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(admitted.hostId),
    scheduleToStartTimeout: '5 minutes',
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: `${input.config.heartbeatTimeoutSeconds} seconds`,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 3, nonRetryableErrorTypes: [...PERMANENT_SANDBOX_FAILURES] },
  });
  const sandbox = await prepare.prepareSandbox({
    jobId: input.jobId, groupId: admitted.groupId, generation: admitted.generation, attemptId: admitted.attemptId,
    uid: admitted.uid, repo: admitted.repo, ...(admitted.baseRef ? { baseRef: admitted.baseRef } : {}),
    ...(admitted.baseSha ? { baseSha: admitted.baseSha } : {}), ...(admitted.restore ? { restore: admitted.restore } : {}),
    ...(limits ? { limits: sandboxLimitsOf(limits), repositoryMaxBytes: limits.repositoryMaxBytes } : {}),
    ...(admitted.executionProfile ? { executionProfile: admitted.executionProfile } : {}),
  });
  await control.recordSandbox({
    jobId: input.jobId, groupId: admitted.groupId, containerId: sandbox.containerId, baseSha: sandbox.baseSha, generation: admitted.generation,
  });
  return host.runAgentTurn({ attemptId: admitted.attemptId, jobId: input.jobId, turnSeq: admitted.seq });
}

/** The container caps of the admitted limits (pids, open files and disk only where the admission recorded them: older histories have none). */
function sandboxLimitsOf(limits: NonNullable<AdmittedTurn['limits']>): { memoryBytes: number; nanoCpus: number; pids?: number; openFiles?: number; diskBytes?: number } {
  return {
    memoryBytes: limits.memoryBytes, nanoCpus: limits.nanoCpus,
    ...(limits.pids !== undefined ? { pids: limits.pids } : {}), ...(limits.openFiles !== undefined ? { openFiles: limits.openFiles } : {}),
    ...(limits.diskBytes !== undefined ? { diskBytes: limits.diskBytes } : {}),
  };
}

async function fenceOnHost(admitted: AdmittedTurn): Promise<void> {
  const host = proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(admitted.hostId),
    scheduleToStartTimeout: '2 minutes',
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 2 },
  });
  await host.fenceMember({ groupId: admitted.groupId, uid: admitted.uid });
}

/** Maps a host activity failure to the turn's outcome. */
function outcomeOfFailure(err: unknown): TurnOutcome {
  if (isCancellation(err)) return { kind: 'cancelled' };
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof ApplicationFailure) {
    // Only messages written for owners are shown; anything else is a plain sentence naming its type.
    const ownerFacing = cause.type !== undefined && cause.type !== null && OWNER_FACING_FAILURE_TYPES.includes(cause.type);
    return { kind: 'failed', error: ownerFacing ? cause.message || 'The turn failed' : unexplainedTurnFailure(cause.type ?? undefined) };
  }
  const name = (cause as { name?: string } | undefined)?.name;
  if (name === 'TimeoutFailure') return { kind: 'lost', error: 'The host runner stopped responding during the turn' };
  return { kind: 'failed', error: unexplainedTurnFailure(name) };
}
