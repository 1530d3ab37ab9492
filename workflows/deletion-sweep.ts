/**
 * The deletion sweep (docs/chat-deletion.md), started every minute by the
 * Schedule `agent-deletion-sweep` (overlap SKIP: one sweep at a time). It takes due deletion
 * requests ONE AT A TIME, up to `maxRequests` per run, and for each:
 *
 * 1. claims it under a lease (`claimDueDeletion`: `pending`/`failed` and due, or `running` with an
 *    expired lease, i.e. a sweep that died mid-request);
 * 2. purges the chat's records (`purgeDeletedChat`; refused while a turn is still active);
 * 3. when the chat was the last member of its sandbox group, ends the group: stop, then deletion,
 *    each sent as the sweeper to `sandbox:<groupId>` and awaited in PostgreSQL (bounded) until the
 *    group reaches `stopped`, then `deleted`. A stale host, a refusal or a timeout fails the attempt;
 * 4. ends the attempt `done`, or `failed` with `next_attempt_at = now + retrySeconds`.
 *
 * Every activity has bounded retries, so a run always ends (a stuck run would make the Schedule
 * skip every later minute). If a run dies anyway, its request stays `running` until the lease
 * expires and a later sweep takes it again.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ClaimedDeletion, DeletionActivities, SandboxEnding } from '../activities/control/deletion-activities';
import type { DeletionSweepInput, DeletionSweepResult } from './definitions/deletion-sweep';

/** PostgreSQL steps: a few quick tries, then the attempt fails (or, for the claim, the run ends). */
const records = proxyActivities<DeletionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** Sending a sandbox action: the delivery waits up to 90 s for the group workflow's answer; not retried here. */
const sends = proxyActivities<DeletionActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 1 },
});

/** A sandbox step's outcome must be awaited at most a few times per request. */
const MAX_SANDBOX_STEPS = 6;

class RetryLater extends Error {}

function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

export async function deletionSweepWorkflow(input: DeletionSweepInput): Promise<DeletionSweepResult> {
  const settles = proxyActivities<DeletionActivities>({
    startToCloseTimeout: `${input.sandboxSettleSeconds + 60} seconds`,
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 2, initialInterval: '1 second' },
  });
  const result: DeletionSweepResult = { done: [], failed: [] };

  /** Stop, then delete the group when no member is left; how it ended. */
  async function endSandbox(groupId: string): Promise<SandboxEnding> {
    for (let step = 0; step < MAX_SANDBOX_STEPS; step++) {
      const next = await records.nextSandboxStep({ groupId });
      switch (next.kind) {
        case 'none': case 'deleted': return next.kind === 'none' ? 'none' : 'deleted';
        case 'kept': return 'kept';
        case 'archived': return 'archived';
        case 'no_container': return 'no_container';
        case 'retry': throw new RetryLater(next.reason);
        case 'wait':
          if ((await settles.awaitSandboxSettled({ groupId, timeoutSeconds: input.sandboxSettleSeconds })) === 'timeout') {
            throw new RetryLater(`An action (${next.pendingAction}) in progress on the sandbox did not finish within ${input.sandboxSettleSeconds} s`);
          }
          continue;
        case 'send': {
          await sends.sendSweeperSandboxAction({ groupId, step: next });
          const state = await settles.awaitSandboxSettled({ groupId, timeoutSeconds: input.sandboxSettleSeconds });
          // The deletion ends `deleted`, or `cold` once it is archive-and-delete (sandboxDeletionAction).
          const reached = next.action === 'stop' ? state === 'stopped' || state === 'dead' : state === 'deleted' || state === 'cold' || state === 'missing';
          if (!reached) throw new RetryLater(state === 'timeout'
            ? `The sandbox's ${next.action} did not finish within ${input.sandboxSettleSeconds} s`
            : `The sandbox's ${next.action} did not complete (the group is ${state})`);
          continue;
        }
      }
    }
    throw new RetryLater(`The sandbox did not reach deleted within ${MAX_SANDBOX_STEPS} steps`);
  }

  async function handle(claim: ClaimedDeletion): Promise<'done' | 'fenced'> {
    const purge = await records.purgeDeletedChat(claim);
    if (purge.kind === 'fenced') return 'fenced';
    if (purge.kind === 'busy') throw new RetryLater(purge.reason);
    const sandbox = claim.groupId === null ? 'none' : await endSandbox(claim.groupId);
    return (await records.finishDeletion({ ...claim, sandbox })) ? 'done' : 'fenced';
  }

  for (let i = 0; i < input.maxRequests; i++) {
    const claim = await records.claimDueDeletion({ leaseSeconds: input.leaseSeconds });
    if (claim === null) break;
    try {
      if ((await handle(claim)) === 'done') result.done.push(claim.requestId);
    } catch (err) {
      if (isCancellation(err)) throw err;
      await records.failDeletion({ ...claim, error: messageOf(err), retrySeconds: input.retrySeconds });
      result.failed.push(claim.requestId);
    }
  }
  return result;
}
