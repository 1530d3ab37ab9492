/**
 * Control-queue activities of the chat workflow: thin Temporal adapters over the turn state
 * machine (`agent/jobs/turn-transitions.ts`) and admission (`agent/jobs/turn-admission.ts`).
 * Each call is one transaction and idempotent, so a retried activity or a restarted control
 * worker never runs a turn twice or skips one; domain answers that Temporal must act on become
 * typed `ApplicationFailure`s here. PostgreSQL is the source of truth.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import { admitTurn, type AdmissionLimits, type AdmittedTurn } from '../../agent/jobs/turn-admission';
import { claimAndWake, type ClaimDeps } from '../../agent/jobs/turn-claims';
import { abandonRunningTurn, finishAttempt, nextActiveTurn, type TurnOutcome, type TurnState } from '../../agent/jobs/turn-transitions';
import { FailureType } from '../../workflows/definitions/failures';
import type { TurnLimits } from '../../agent/settings/host-settings';
import { dropUnfinishedPublication } from '../../agent/source/publications';
import type { PublishDelivery } from '../../agent/source/publish-delivery';
import type { Knex } from 'knex';

export type { AdmittedTurn, TurnOutcome, TurnState };

export interface ChatActivityDeps {
  db: Db;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'AGENT_HOST_SLOTS'>;
  /** The host settings' turn limits now (read at each admission; docs/agent-admin.md "Host settings"). */
  turnLimits?: () => TurnLimits;
  /** Starts the publication of a completed turn's patch (docs/publisher.md); without it the reconciler does. */
  publisher?: PublishDelivery;
  /** The claim queue (docs/agent-hosts.md "The claim queue"): with it, a finished attempt's freed slot is claimed at once. */
  claims?: Omit<ClaimDeps, 'db' | 'limits'>;
}

export function createChatActivities(deps: ChatActivityDeps) {
  const { db } = deps;
  const limits = (): AdmissionLimits => ({
    staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, defaultSlots: deps.settings.AGENT_HOST_SLOTS,
    ...(deps.turnLimits ? { turnLimits: deps.turnLimits() } : {}),
  });

  return {
    /**
     * The next turn the chat must deal with (its lowest non-terminal turn), or null when idle.
     * `claimed`: the turn is running on an attempt a host's claim admitted that this workflow run
     * may still take (docs/agent-hosts.md "The claim queue"), so it is dispatched, not abandoned.
     */
    async nextTurn(input: { jobId: string }): Promise<{ seq: number; state: TurnState; claimed?: true } | null> {
      const row = await nextActiveTurn(db, input.jobId);
      if (!row) return null;
      if (row.state === 'running' && row.attempt_id && (await takeable(db, row.attempt_id, workflowRunId()))) return { seq: row.seq, state: row.state, claimed: true };
      return { seq: row.seq, state: row.state };
    },

    /**
     * Claims a host slot for turn `seq` when it is still the chat's first non-terminal turn and
     * queued, or takes the admission a host's claim made for it. Throws the retryable `NoFreeSlot`
     * while no slot is free (or a claim holds the chat this instant); returns `skipped` when the
     * turn is no longer queued (cancelled meanwhile) or is not next.
     */
    async admitTurn(input: { jobId: string; seq: number }): Promise<AdmittedTurn | { kind: 'skipped'; state: TurnState | 'not_next' }> {
      const runId = workflowRunId();
      const admission = await admitTurn(db, { ...input, ...(runId !== undefined ? { runId } : {}) }, limits());
      switch (admission.kind) {
        case 'job_missing': throw ApplicationFailure.nonRetryable(`job ${input.jobId} does not exist`, FailureType.jobMissing);
        case 'sandbox_missing': throw ApplicationFailure.nonRetryable(admission.message, FailureType.sandboxMissing);
        case 'wait': throw ApplicationFailure.retryable(`No free execution slot (${admission.reason})`, FailureType.noFreeSlot);
        case 'busy': throw ApplicationFailure.retryable('Another admission holds this chat now', FailureType.noFreeSlot);
        default: return admission;
      }
    },

    /** Records the container and (first time) the workspace base the host reported. */
    async recordSandbox(input: { jobId: string; groupId: string; containerId: string; baseSha: string; generation?: number }): Promise<void> {
      await db.transaction(async (trx) => {
        // Only for the generation the attempt prepared (a restore bumps it; histories from before pass none).
        await trx('agent_sandboxes').where({ group_id: input.groupId }).modify((q) => { if (input.generation !== undefined) void q.where({ generation: input.generation }); })
          // New work on the group makes it visible in the inventory again (resuming a group counts as new work).
          .update({ container_id: input.containerId, state: 'running', hidden_at: null, hidden_reason: null, updated_at: trx.fn.now(), last_activity_at: trx.fn.now() });
        await trx('agent_jobs').where({ job_id: input.jobId }).whereNull('base_sha').update({ base_sha: input.baseSha, updated_at: trx.fn.now() });
      });
    },

    /**
     * Ends an attempt and its turn with `outcome` (a no-op when already recorded); the end is the
     * sandbox's last activity. A completed turn's pending patch is then handed to the publisher
     * (the start is a notification: the reconciler repairs a missed one); any other end drops it.
     */
    async finishTurn(input: { attemptId: string; outcome: TurnOutcome }): Promise<void> {
      await db.transaction(async (trx) => {
        if ((await finishAttempt(trx, input)) !== 'not_running') {
          await noteSandboxActivity(trx, trx('agent_attempts').select('job_id').where({ attempt_id: input.attemptId }));
        }
        await dropUnfinishedPublication(trx, input.attemptId);
        // An attempt that restored a cold group but never recorded its container leaves it cold again.
        await trx('agent_sandboxes')
          .where({ state: 'restoring' })
          .whereIn(['group_id', 'generation'], trx('agent_attempts as a').join('agent_sandbox_members as m', 'm.job_id', 'a.job_id')
            .where('a.attempt_id', input.attemptId).select('m.group_id', 'a.generation'))
          .update({ state: 'cold', updated_at: trx.fn.now() });
      });
      if (input.outcome.kind === 'completed' && deps.publisher) await startPublication(db, deps.publisher, input.attemptId);
      if (deps.claims) {
        // The attempt's slot is free: its host claims the oldest queued turns it may run.
        const host = await db('agent_attempts').where({ attempt_id: input.attemptId }).first<{ host_id: string } | undefined>('host_id');
        if (host) await claimAndWake({ ...deps.claims, db, limits }, host.host_id);
      }
    },

    /** Fails a turn whose running attempt no workflow is watching any more (its end, too, is the sandbox's last activity). */
    async abandonTurn(input: { jobId: string; seq: number; reason: string }): Promise<void> {
      await db.transaction(async (trx) => {
        if (await abandonRunningTurn(trx, input)) await noteSandboxActivity(trx, input.jobId);
      });
    },
  };
}

/** The workflow run calling this activity (undefined outside an activity: direct calls in tests). */
function workflowRunId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined;
  }
}

/** Whether run `runId` may take the running attempt: admitted by a host's claim and not taken by another run. */
async function takeable(db: Db, attemptId: string, runId: string | undefined): Promise<boolean> {
  if (runId === undefined) return false;
  const row = await db('agent_attempts').where({ attempt_id: attemptId, state: 'running' }).whereNotNull('admission')
    .where((q) => q.whereNull('dispatched_run').orWhere('dispatched_run', runId)).first<{ attempt_id: string } | undefined>('attempt_id');
  return row !== undefined;
}

/**
 * The end of a turn is activity of its chat's sandbox group, like its admission: the idle stop
 * (docs/sandboxes.md "Idle stop") counts the idle time from `last_activity_at`, so a long turn
 * does not leave its sandbox looking idle from the moment it was admitted.
 */
async function noteSandboxActivity(trx: Knex.Transaction, job: string | Knex.QueryBuilder): Promise<void> {
  const jobs = typeof job === 'string' ? [job] : job;
  await trx('agent_sandboxes').whereIn('group_id', trx('agent_jobs').select('group_id').whereIn('job_id', jobs).whereNotNull('group_id'))
    .update({ last_activity_at: trx.fn.now() });
}

/** Starts the publication of the attempt's pending patch, if it left one. */
async function startPublication(db: Db, publisher: PublishDelivery, attemptId: string): Promise<void> {
  const pending = await db('agent_turn_patches as p').join('agent_jobs as j', 'j.job_id', 'p.job_id')
    .where({ 'p.attempt_id': attemptId, 'p.publish_state': 'pending' }).first<{ turn_id: string; job_id: string; owner_id: string } | undefined>('p.turn_id', 'p.job_id', 'j.owner_id');
  if (pending) await publisher.start({ turnId: pending.turn_id, jobId: pending.job_id, ownerId: Number(pending.owner_id) });
}

export type ChatActivities = ReturnType<typeof createChatActivities>;
