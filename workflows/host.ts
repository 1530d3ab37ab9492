/**
 * `host:<hostId>`: every change to one execution host as a durable state machine (slots,
 * heartbeats, removal; docs/agent-hosts.md "The host workflow"). PostgreSQL stays the source of
 * truth (placement reads the host row); this workflow makes each change happen once, in order, and
 * shows it in the Temporal UI (search attributes `AgentHost`, `AgentState`; memo `slots`,
 * `removal`).
 *
 * 1. Operator actions arrive as Updates (update-with-start from the API): `changeSlots`,
 *    `requestRemoval`, `cancelRemoval`. Validators refuse, without touching history, an action
 *    while another is in progress and any action the host's state forbids (slots while draining,
 *    cancel with no removal pending). Handlers make the change through one activity each (the
 *    audit row commits with it).
 * 2. The main loop reads the host row (`observeHost`) and judges its state: `online` while a
 *    heartbeat is younger than `staleSeconds`, `stale` after, `enrolled` before the first beat,
 *    `draining` while a removal is pending. While online it sleeps until the moment the host would
 *    turn stale; the heartbeat route signals `hostHeartbeat` when a beat brings the host back
 *    online or reports new slots, and wakes it early.
 * 3. A slot change is followed until the runner reports it (`applied`, audited), with its status
 *    in the memo meanwhile (`applying`, `not_applied` while offline, `redeploy` for an old runner).
 * 4. A draining host is checked every `drainCheckSeconds` and removed once nothing holds it; the
 *    run then ends with `removed`.
 *
 * History is bounded by continue-as-new (the pending change and drain are carried).
 */
import {
  ActivityFailure, allHandlersFinished, ApplicationFailure, condition, continueAsNew, proxyActivities, setHandler, upsertMemo, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { HostWorkflowActivities } from '../activities/control/host-workflow-activities';
import {
  cancelRemovalUpdate, changeSlotsUpdate, hostHeartbeatSignal, HostActionFailure, hostStatusQuery, requestRemovalUpdate, slotChangeStatus,
  type ChangeSlotsRequest, type Draining, type HostAction, type HostObservation, type HostState, type HostWorkflowInput, type PendingSlots, type RemovalAnswer, type RemovalRequest,
} from './definitions/host';
import { OPERATOR_WAITING_RETRY, UNTIL_RECORDED_RETRY } from './definitions/activity-retries';
import { searchAttributes } from './definitions/search-attributes';

/** Operator actions: the operator is waiting, so a few quick tries. */
const claims = proxyActivities<HostWorkflowActivities>({
  startToCloseTimeout: '20 seconds',
  retry: OPERATOR_WAITING_RETRY,
});

/** The loop's reads and records must happen: retried until PostgreSQL answers. */
const records = proxyActivities<HostWorkflowActivities>({
  startToCloseTimeout: '20 seconds',
  retry: UNTIL_RECORDED_RETRY,
});

/** Events after which a run continues as new (the server also suggests it). */
const EVENTS_PER_RUN = 5000;

function failure(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

/** The host's state from one observation. */
function stateOf(seen: Extract<HostObservation, { found: true }>, staleSeconds: number): HostState {
  if (seen.removalRequestedAt !== null) return 'draining';
  if (seen.heartbeatAgeSeconds === null) return 'enrolled';
  return seen.heartbeatAgeSeconds < staleSeconds ? 'online' : 'stale';
}

export async function hostWorkflow(input: HostWorkflowInput): Promise<HostState> {
  const { hostId } = input;
  let state: HostState = input.carried?.state ?? 'enrolled';
  let shown: HostState | undefined;
  let pendingSlots: PendingSlots | undefined = input.carried?.pendingSlots;
  let draining: Draining | undefined = input.carried?.draining;
  let inProgress: HostAction | undefined;
  let wake = false;

  const show = (next: HostState) => {
    state = next;
    if (shown === next) return;
    shown = next;
    upsertSearchAttributes([{ key: searchAttributes.state, value: next }]);
  };
  const memo = () => upsertMemo({
    slots: pendingSlots ? { saved: pendingSlots.slots, target: pendingSlots.target, status: pendingSlots.status } : null,
    removal: draining ? { requestedAt: draining.requestedAt, held: draining.held } : null,
  });
  /** Runs an operator action's activity; a PostgreSQL that does not answer is a failure the API shows as 503. */
  const act = async <T>(action: HostAction, call: () => Promise<T>): Promise<T> => {
    inProgress = action;
    try {
      return await call().catch((err: unknown) => {
        throw failure(HostActionFailure.failed, `The host action could not be carried out now: ${messageOf(err)}`);
      });
    } finally {
      inProgress = undefined;
      wake = true;
    }
  };

  upsertSearchAttributes([{ key: searchAttributes.host, value: hostId }]);
  upsertMemo({ host: hostId });

  setHandler(changeSlotsUpdate, async (request) => {
    const saved = await act('change_slots', () => claims.saveHostSlots({ hostId, slots: request.slots, by: request.by }));
    if (saved.kind === 'not_found') throw failure(HostActionFailure.notFound, `Host not found: ${hostId}`);
    if (saved.kind === 'refused') throw failure(HostActionFailure.refused, saved.reason);
    pendingSlots = { slots: request.slots, target: request.slots ?? input.defaultSlots, status: 'applying' };
    memo();
    return { hostId, previous: saved.previous, slots: request.slots };
  }, {
    validator: (request: ChangeSlotsRequest) => {
      const { slots } = request;
      if (slots !== null && (!Number.isInteger(slots) || slots < 2 || slots > 128)) throw failure(HostActionFailure.conflict, 'slots must be an integer 2..128 or null');
      if (inProgress !== undefined) throw failure(HostActionFailure.conflict, `Another action (${inProgress}) is in progress on host ${hostId}`);
      if (draining) throw failure(HostActionFailure.conflict, `Host ${hostId} is being removed (requested at ${draining.requestedAt}); cancel the removal before changing its slots`);
    },
  });

  setHandler(requestRemovalUpdate, async (request): Promise<RemovalAnswer> => {
    const step = await act('remove', () => claims.requestHostRemoval({ hostId, by: request.by }));
    if (step.kind === 'not_found') throw failure(HostActionFailure.notFound, `Host not found: ${hostId}`);
    if (step.kind === 'removed') {
      show('removed');
      return { hostId, state: 'removed', tombstone: step.tombstone };
    }
    if (step.kind !== 'draining') throw failure(HostActionFailure.failed, 'The removal was not recorded');
    draining = { requestedAt: step.requestedAt, held: step.held };
    show('draining');
    memo();
    return { hostId, state: 'draining', requestedAt: step.requestedAt, held: step.held, alreadyRequested: step.alreadyRequested };
  }, {
    validator: (_request: RemovalRequest) => {
      if (inProgress !== undefined) throw failure(HostActionFailure.conflict, `Another action (${inProgress}) is in progress on host ${hostId}`);
    },
  });

  setHandler(cancelRemovalUpdate, async (request) => {
    const step = await act('cancel_removal', () => claims.cancelHostRemoval({ hostId, by: request.by }));
    if (step.kind === 'not_found') throw failure(HostActionFailure.notFound, `Host not found: ${hostId}`);
    draining = undefined;
    memo();
    return { hostId, state };
  }, {
    validator: (_request: RemovalRequest) => {
      if (inProgress !== undefined) throw failure(HostActionFailure.conflict, `Another action (${inProgress}) is in progress on host ${hostId}`);
      if (!draining) throw failure(HostActionFailure.conflict, `No removal is pending on host ${hostId}`);
    },
  });

  setHandler(hostHeartbeatSignal, () => {
    wake = true;
  });
  setHandler(hostStatusQuery, () => ({ state, pendingSlots: pendingSlots ?? null, draining: draining ?? null }));

  while (state !== 'removed') {
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > EVENTS_PER_RUN) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof hostWorkflow>({ ...input, carried: { state, ...(pendingSlots ? { pendingSlots } : {}), ...(draining ? { draining } : {}) } });
    }
    wake = false;
    const seen = await records.observeHost({ hostId });
    if (removedMeanwhile()) break;
    if (!seen.found) {
      show('removed');
      break;
    }
    if (seen.removalRequestedAt !== null && await drainStep()) break;
    if (seen.removalRequestedAt === null && draining) {
      // Cancelled outside this run's handlers (the host was enrolled again).
      draining = undefined;
      memo();
    }
    show(draining ? 'draining' : stateOf(seen, input.staleSeconds));
    await followSlots(seen);
    await condition(() => wake || state === 'removed', waitMs(seen));
  }
  await condition(allHandlersFinished);
  return 'removed';

  /** Whether an update handler removed the host while the loop was waiting on an activity. */
  function removedMeanwhile(): boolean {
    return state === 'removed';
  }

  /** One check of a pending removal; true when the host is gone. */
  async function drainStep(): Promise<boolean> {
    const step = await records.finishHostRemoval({ hostId });
    if (step.kind === 'removed' || step.kind === 'not_found') {
      draining = undefined;
      memo();
      show('removed');
      return true;
    }
    if (step.kind === 'not_requested') {
      draining = undefined;
      memo();
    } else if (step.kind === 'draining' && (!draining || draining.held.join() !== step.held.join())) {
      draining = { requestedAt: step.requestedAt, held: step.held };
      memo();
    }
    return false;
  }

  /** Records where the pending slot change stands: `applied` (audited, then forgotten) or a new status in the memo. */
  async function followSlots(seen: Extract<HostObservation, { found: true }>): Promise<void> {
    if (!pendingSlots) return;
    if (seen.slotsSaved !== pendingSlots.slots) {
      // Saved differently since (another run or a direct write): follow what is saved now.
      pendingSlots = { slots: seen.slotsSaved, target: seen.slotsSaved ?? input.defaultSlots, status: 'applying' };
    }
    const online = seen.heartbeatAgeSeconds !== null && seen.heartbeatAgeSeconds < input.staleSeconds;
    const status = slotChangeStatus({ target: pendingSlots.target, reported: seen.slotsTotal, online, runnerVersion: seen.runnerVersion });
    if (status === 'applied') {
      await records.noteHostSlotsApplied({ hostId, slots: pendingSlots.slots, reported: pendingSlots.target });
      pendingSlots = undefined;
      memo();
    } else if (status !== pendingSlots.status) {
      pendingSlots = { ...pendingSlots, status };
      memo();
    }
  }

  /** Until the next look: the moment an online host would turn stale; otherwise a fallback poll (a heartbeat signal wakes it sooner). */
  function waitMs(seen: Extract<HostObservation, { found: true }>): number {
    let ms = input.staleSeconds * 1000;
    if (state === 'online' && seen.heartbeatAgeSeconds !== null) ms = Math.max(1000, Math.ceil((input.staleSeconds - seen.heartbeatAgeSeconds) * 1000) + 500);
    if (draining) ms = Math.min(ms, input.drainCheckSeconds * 1000);
    return ms;
  }
}
