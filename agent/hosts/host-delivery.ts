/**
 * The API's side of the host workflow (`host:<hostId>`, docs/agent-hosts.md "The host workflow"):
 *
 * - {@link sendHostAction}: an operator action as an Update-with-Start on the control task queue
 *   (started when not running, `USE_EXISTING` otherwise), waiting for the update's answer; 404 for
 *   an unknown host, 409 with the workflow's reason for a refusal (audited `refused`), 503 when it
 *   cannot be decided now.
 * - {@link HostHeartbeatNotifier}: after a heartbeat is recorded in PostgreSQL, signals
 *   `hostHeartbeat` (signal-with-start) when the beat is news to the workflow: the host was not
 *   online before, its reported slots changed, or this API process has not told the workflow about
 *   this host's current enrolment yet (which also starts the workflow of a host enrolled before it
 *   existed, or enrolled again after removal). Best effort, never awaited by the beat: the workflow
 *   re-reads PostgreSQL on its own schedule, so a lost signal only delays what it shows.
 */
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError } from '../../lib/errors';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { requireTemporal } from '../../lib/temporal';
import type { hostWorkflow } from '../../workflows/host';
import {
  cancelRemovalUpdate, changeSlotsUpdate, HOST_WORKFLOW_TYPE, hostHeartbeatSignal, HostActionFailure, hostWorkflowId, requestRemovalUpdate,
  type CancelRemovalAccepted, type ChangeSlotsAccepted, type HeartbeatNote, type HostActionBy, type HostWorkflowInput, type RemovalAnswer,
} from '../../workflows/definitions/host';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { noteHostActionRefused } from './host-observation';
import { HOST_ID, type HeartbeatRecord } from './host-registry';

export type HostDeliverySettings = Pick<Settings,
  'TEMPORAL_CONTROL_TASK_QUEUE' | 'TEMPORAL_CALL_TIMEOUT_SECONDS' | 'AGENT_HOST_STALE_SECONDS' | 'AGENT_HOST_SLOTS' | 'AGENT_HOST_DRAIN_CHECK_SECONDS'>;

export interface HostDeliveryDeps {
  db: Db;
  temporal: Client;
  settings: HostDeliverySettings;
}

/** How long the operator waits for an action's answer (one PostgreSQL transaction, retried a few times). */
const ACTION_DEADLINE_MS = 60_000;

export function hostWorkflowInput(settings: HostDeliverySettings, hostId: string): HostWorkflowInput {
  return {
    hostId, staleSeconds: settings.AGENT_HOST_STALE_SECONDS, defaultSlots: settings.AGENT_HOST_SLOTS, drainCheckSeconds: settings.AGENT_HOST_DRAIN_CHECK_SECONDS,
  };
}

function startOptions(settings: HostDeliverySettings, hostId: string) {
  return {
    workflowId: hostWorkflowId(hostId),
    taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
    args: [hostWorkflowInput(settings, hostId)] as [HostWorkflowInput],
    typedSearchAttributes: [{ key: searchAttributes.host, value: hostId }],
    memo: { host: hostId },
  };
}

/** An operator action and the answer it gets. */
export type HostActionCall =
  | { action: 'change_slots'; slots: number | null; by: HostActionBy }
  | { action: 'remove'; by: HostActionBy }
  | { action: 'cancel_removal'; by: HostActionBy };

type AnswerOf<C extends HostActionCall> =
  C extends { action: 'change_slots' } ? ChangeSlotsAccepted : C extends { action: 'remove' } ? RemovalAnswer : CancelRemovalAccepted;

async function enrolled(db: Db, hostId: string): Promise<boolean> {
  if (!HOST_ID.test(hostId)) return false;
  return (await db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').first('host_id')) !== undefined;
}

/** Runs `call` on host `hostId` through its workflow (after checking that Temporal answers at all). */
export async function sendHostAction<C extends HostActionCall>(deps: HostDeliveryDeps, hostId: string, call: C): Promise<AnswerOf<C>> {
  if (!(await enrolled(deps.db, hostId))) throw new AppError('not_found', `Host not found: ${hostId}`);
  await requireTemporal(deps.temporal, deps.settings.TEMPORAL_CALL_TIMEOUT_SECONDS, 'the host action was not carried out and nothing changed');
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof hostWorkflow>(HOST_WORKFLOW_TYPE, {
    ...startOptions(deps.settings, hostId), workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const execute = (): Promise<unknown> => deps.temporal.connection.withDeadline(Date.now() + ACTION_DEADLINE_MS, (): Promise<unknown> => {
    switch (call.action) {
      case 'change_slots': return deps.temporal.workflow.executeUpdateWithStart(changeSlotsUpdate, { args: [{ slots: call.slots, by: call.by }], startWorkflowOperation });
      case 'remove': return deps.temporal.workflow.executeUpdateWithStart(requestRemovalUpdate, { args: [{ by: call.by }], startWorkflowOperation });
      case 'cancel_removal': return deps.temporal.workflow.executeUpdateWithStart(cancelRemovalUpdate, { args: [{ by: call.by }], startWorkflowOperation });
    }
  });
  try {
    return (await execute()) as AnswerOf<C>;
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure) {
      if (cause.type === HostActionFailure.notFound) throw new AppError('not_found', cause.message, { cause: err });
      if (cause.type === HostActionFailure.conflict) {
        // A validator's refusal never reaches an activity: its audit row is written here (an activity's refusal writes its own).
        await noteHostActionRefused(deps.db, { hostId, action: call.action, by: call.by, reason: cause.message });
        throw new AppError('conflict', cause.message, { cause: err });
      }
      if (cause.type === HostActionFailure.refused) throw new AppError('conflict', cause.message, { cause: err });
    }
    const reason = cause instanceof ApplicationFailure ? cause.message : 'the host workflow did not answer in time';
    throw new AppError('service_unavailable', `The host action could not be carried out now: ${reason}`, { cause: err });
  }
}

/** Hosts (by enrolment) this process has told its workflow about; forgotten wholesale past this many. */
const MAX_REMEMBERED = 10_000;

/** Signals the host workflow about heartbeats it waits for (see the module comment). */
export class HostHeartbeatNotifier {
  private readonly told = new Set<string>();

  constructor(private readonly deps: { temporal: Client; settings: HostDeliverySettings; log: Logger }) {}

  /** What the beat means to the workflow; undefined when nothing it waits for. */
  noteOf(hostId: string, record: HeartbeatRecord, slotsTotal: number): HeartbeatNote | undefined {
    const key = `${hostId}\u0000${record.credentialPrefix}`;
    const first = !this.told.has(key);
    if (!record.wasOnline) return { reason: 'online', slotsTotal };
    if (record.previousSlotsTotal !== slotsTotal) return { reason: 'slots', slotsTotal };
    return first ? { reason: 'first', slotsTotal } : undefined;
  }

  /** Signals (starting the workflow when needed) without failing or delaying the beat; resolves when sent or given up. */
  async notify(hostId: string, record: HeartbeatRecord, slotsTotal: number): Promise<void> {
    const note = this.noteOf(hostId, record, slotsTotal);
    if (!note) return;
    const key = `${hostId}\u0000${record.credentialPrefix}`;
    try {
      await this.deps.temporal.connection.withDeadline(Date.now() + this.deps.settings.TEMPORAL_CALL_TIMEOUT_SECONDS * 1000, () =>
        this.deps.temporal.workflow.signalWithStart<typeof hostWorkflow, [HeartbeatNote]>(HOST_WORKFLOW_TYPE, {
          ...startOptions(this.deps.settings, hostId), signal: hostHeartbeatSignal, signalArgs: [note],
        }));
      if (this.told.size >= MAX_REMEMBERED) this.told.clear();
      this.told.add(key);
    } catch (err) {
      this.deps.log.warn({ event: 'agent_host_workflow_signal_failed', host_id: hostId, reason: note.reason, err: (err as Error).message }, 'could not signal the host workflow; it reads the host row on its own schedule');
    }
  }
}
