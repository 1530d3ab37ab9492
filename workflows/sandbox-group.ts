/**
 * `sandbox:<groupId>`: the lifecycle of one retained sandbox group under operator actions (spec
 * 3.4, docs/sandboxes.md "Lifecycle"). Each action arrives as an Update (update-with-start from
 * the API) and runs one at a time:
 *
 * 1. the Update's validator refuses, without touching history, an action while another is in
 *    progress on this group (and a request whose action does not match its update);
 * 2. the handler claims the action in PostgreSQL (`claimSandboxAction`: the condition on the
 *    locked group row; a refusal's reason becomes the API's 409) and, for a deletion, asks the
 *    host to confirm the exact container is stopped or dead before accepting (else the claim is
 *    released and the action refused);
 * 3. the accepted action's host work (stop, remove) runs in the main loop on `host:<hostId>`, and
 *    `finishSandboxAction` records `stopped`/`deleted` only on the host's confirmation, or returns
 *    the group to the state it came from.
 *
 * PostgreSQL stays the source of truth: a turn's admission locks the same row, so it waits while
 * a stop or delete is pending and an action is refused while a turn runs. The workflow ends after
 * `idleSeconds` without an action; the next action starts a new run.
 */
import {
  ActivityFailure, allHandlersFinished, ApplicationFailure, condition, proxyActivities, setHandler, upsertMemo, upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SandboxActivities } from '../activities/sandbox-activities';
import type { SandboxGroupActivities } from '../activities/control/sandbox-group-activities';
import {
  confirmsStopped, describeObservation, SANDBOX_ACTION_UPDATES, SandboxActionFailure,
  type SandboxAction, type SandboxActionAccepted, type SandboxActionRequest, type SandboxGroupInput, type SandboxState,
} from './definitions/sandbox-group';
import { FailureType } from './definitions/failures';
import { OPERATOR_WAITING_RETRY, UNTIL_RECORDED_RETRY } from './definitions/activity-retries';
import { searchAttributes } from './definitions/search-attributes';
import { hostTaskQueue } from './definitions/task-queues';

/** Claims and releases: the operator is waiting, so a few quick tries. */
const claims = proxyActivities<SandboxGroupActivities>({
  startToCloseTimeout: '20 seconds',
  retry: OPERATOR_WAITING_RETRY,
});

/** Recording an outcome must happen: retried until PostgreSQL answers. */
const records = proxyActivities<SandboxGroupActivities>({
  startToCloseTimeout: '20 seconds',
  retry: UNTIL_RECORDED_RETRY,
});

/** Object-store calls (grant, verify and commit): a store that stays down fails the action, the container stays. */
const storeCalls = proxyActivities<SandboxGroupActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 6 },
});

/** Spool or upload rounds of one archive (a lost spool or an expired grant starts a round again). */
const ARCHIVE_ROUNDS = 3;

type Claim = Awaited<ReturnType<SandboxGroupActivities['claimSandboxAction']>>;
type ClaimedAction = Extract<Claim, { kind: 'claimed' }>;
type FinishInput = Parameters<SandboxGroupActivities['finishSandboxAction']>[0];

interface Work {
  request: SandboxActionRequest;
  claim: ClaimedAction;
}

function refused(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: SandboxActionFailure.refused, message, nonRetryable: true });
}

function conflict(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: SandboxActionFailure.conflict, message, nonRetryable: true });
}

function failed(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: SandboxActionFailure.failed, message, nonRetryable: true });
}

function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

export async function sandboxGroupWorkflow(input: SandboxGroupInput): Promise<void> {
  let inProgress: SandboxAction | undefined;
  const work: Work[] = [];
  /** Activities on the group's host: its queue is the claim's host (a restored group may have moved). */
  function onHost(hostId: string) {
    return {
      // Observing before acceptance: the operator waits, so a host that does not pick it up soon is offline.
      observe: proxyActivities<SandboxActivities>({
        taskQueue: hostTaskQueue(hostId),
        scheduleToStartTimeout: '30 seconds',
        startToCloseTimeout: '30 seconds',
        retry: { maximumAttempts: 2, initialInterval: '1 second' },
      }),
      // The accepted action's host work: a host restarting meanwhile picks it up later.
      hostWork: proxyActivities<SandboxActivities>({
        taskQueue: hostTaskQueue(hostId),
        scheduleToStartTimeout: '5 minutes',
        startToCloseTimeout: '2 minutes',
        heartbeatTimeout: '30 seconds',
        retry: { maximumAttempts: 5, initialInterval: '1 second', maximumInterval: '10 seconds' },
      }),
      // Archive transfers: up to 5 GiB each way, heartbeating; a host restarting meanwhile picks them up later.
      transfer: proxyActivities<SandboxActivities>({
        taskQueue: hostTaskQueue(hostId),
        scheduleToStartTimeout: '5 minutes',
        startToCloseTimeout: '30 minutes',
        heartbeatTimeout: '30 seconds',
        retry: { maximumAttempts: 3, initialInterval: '2 seconds', maximumInterval: '30 seconds', nonRetryableErrorTypes: [FailureType.archiveSpoolMissing] },
      }),
    };
  }
  const showState = (state: SandboxState) => upsertSearchAttributes([{ key: searchAttributes.state, value: state }]);

  upsertSearchAttributes([
    { key: searchAttributes.host, value: input.hostId },
    { key: searchAttributes.owner, value: String(input.ownerId) },
  ]);
  upsertMemo({ groupId: input.groupId, host: input.hostId, owner: input.ownerId });

  async function accept(request: SandboxActionRequest): Promise<SandboxActionAccepted> {
    inProgress = request.action;
    let queued = false;
    try {
      const claim = await claims.claimSandboxAction({ groupId: input.groupId, request }).catch((err: unknown) => {
        throw failed(`The action could not be checked now: ${messageOf(err)}`);
      });
      if (claim.kind === 'refused') throw refused(claim.reason);
      showState(claim.state);
      if (claim.kind === 'done') return { groupId: input.groupId, action: request.action, state: claim.state, hidden: claim.hidden };
      if (request.action !== 'stop') await confirmStoppedBeforeDeletion(request, claim);
      work.push({ request, claim });
      queued = true;
      upsertMemo({ pendingAction: request.action });
      return { groupId: input.groupId, action: request.action, state: claim.state, hidden: false };
    } finally {
      if (!queued) inProgress = undefined;
    }
  }

  /** Delete and force delete go ahead only once the host confirms the exact container stopped or dead. */
  async function confirmStoppedBeforeDeletion(request: SandboxActionRequest, claim: ClaimedAction): Promise<void> {
    const target = { containerName: claim.containerName, containerId: claim.containerId, generation: claim.generation };
    let reason: string | undefined;
    let unanswered = false;
    try {
      const seen = await onHost(claim.hostId ?? input.hostId).observe.observeSandboxContainer(target);
      // A group the reconciler marked dead because its container vanished has nothing left to remove.
      const vanished = request.action === 'delete' && claim.fromState === 'dead' && seen.condition === 'missing';
      if (!vanished && !confirmsStopped(seen, claim.containerId, claim.generation)) {
        reason = `The host did not confirm the container stopped or dead: ${describeObservation(seen)}`;
      }
    } catch (err) {
      reason = `The sandbox's host did not answer: ${messageOf(err)}`;
      unanswered = true;
    }
    if (reason === undefined) return;
    const back = await records.releaseSandboxAction({ groupId: input.groupId, request, reason });
    if (back) showState(back);
    throw unanswered ? failed(reason) : refused(reason);
  }

  for (const [action, update] of Object.entries(SANDBOX_ACTION_UPDATES) as Array<[SandboxAction, (typeof SANDBOX_ACTION_UPDATES)[SandboxAction]]>) {
    setHandler(update, accept, {
      validator: (request: SandboxActionRequest) => {
        if (request.action !== action) throw conflict(`The request is for ${String(request.action)}, not ${action}`);
        if (!Number.isInteger(request.generation) || request.generation < 1) throw conflict('The request names no valid generation');
        if (inProgress !== undefined) throw conflict(`Another action (${inProgress}) is in progress on this sandbox`);
      },
    });
  }

  for (;;) {
    const got = await condition(() => work.length > 0, `${input.idleSeconds} seconds`);
    if (!got) {
      await condition(allHandlersFinished);
      if (work.length === 0) return;
      continue;
    }
    const next = work.shift()!;
    await carryOut(next);
    inProgress = undefined;
    upsertMemo({ pendingAction: null });
  }

  async function carryOut({ request, claim }: Work): Promise<void> {
    const { hostWork } = onHost(claim.hostId ?? input.hostId);
    const target = { containerName: claim.containerName, containerId: claim.containerId, generation: claim.generation };
    let finish: FinishInput;
    try {
      if (request.action === 'stop') {
        finish = { groupId: input.groupId, request, observation: await hostWork.stopSandboxContainer(target) };
      } else if (request.action === 'archive_delete') {
        // The container goes only once the archive's receipt is committed; any failure keeps it.
        const archived = await archive(claim);
        finish = archived.ok
          ? { groupId: input.groupId, request, removal: await hostWork.removeStoppedSandboxContainer(target) }
          : { groupId: input.groupId, request, error: archived.error };
      } else {
        finish = { groupId: input.groupId, request, removal: await hostWork.removeStoppedSandboxContainer(target) };
      }
    } catch (err) {
      finish = { groupId: input.groupId, request, error: `The host did not carry out the action: ${messageOf(err)}` };
    }
    const result = await records.finishSandboxAction(finish);
    showState(result.state);
  }

  /**
   * Archive to object storage (docs/sandboxes.md "Archives"): the host spools the stopped container's archive and
   * reports its length and SHA-256, the control plane grants exactly that upload (presigned single
   * PUT, 15 minutes, `If-None-Match: *`), the host uploads it, and the receipt is committed only
   * after the store verified the object. A lost spool or a failed upload (an expired grant) starts
   * another round; after `ARCHIVE_ROUNDS` the action fails and the container is kept.
   */
  async function archive(claim: ClaimedAction): Promise<{ ok: true } | { ok: false; error: string }> {
    const { hostWork, transfer } = onHost(claim.hostId ?? input.hostId);
    const target = { containerName: claim.containerName, containerId: claim.containerId, generation: claim.generation, groupId: input.groupId };
    let lastError = 'no archive round ran';
    for (let round = 1; round <= ARCHIVE_ROUNDS; round += 1) {
      const spooled = await transfer.spoolSandboxArchive(target);
      if (spooled.status === 'not_stopped') return { ok: false, error: `The host did not confirm the container stopped or dead: ${describeObservation(spooled.observation)}` };
      if (spooled.status === 'too_large') return { ok: false, error: `The archive is larger than the 5 GiB single-upload limit (over ${spooled.bytes} bytes); the container is kept` };
      const expected = { groupId: input.groupId, generation: claim.generation, length: spooled.length, sha256: spooled.sha256 };
      try {
        const granted = await storeCalls.grantSandboxArchiveUpload(expected);
        if (granted.kind === 'refused') return { ok: false, error: granted.reason };
        try {
          await transfer.uploadSandboxArchive({ grant: granted.grant, path: spooled.path });
        } catch (err) {
          lastError = `The archive upload failed: ${messageOf(err)}`;
          continue;
        }
        const committed = await storeCalls.commitSandboxArchive(expected);
        if (committed.kind === 'refused') return { ok: false, error: committed.reason };
        return { ok: true };
      } finally {
        await hostWork.discardSandboxArchiveSpool({ path: spooled.path }).catch(() => undefined);
      }
    }
    return { ok: false, error: `${lastError}; the container is kept` };
  }
}
