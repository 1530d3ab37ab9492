/**
 * Tells a chat's workflow about turns: Update-with-Start of `chat:<jobId>` on the control task
 * queue (the workflow is started if it is not running, and the turn is delivered in one call),
 * and the cancel signal for a running turn. Failures are logged, not thrown: the turn is already
 * durable in PostgreSQL and the reconciler delivers it when Temporal answers again.
 */
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import type { chatWorkflow } from '../../workflows/chat';
import { CHAT_WORKFLOW_TYPE, cancelTurnSignal, chatWorkflowId, submitTurnUpdate, wakeSignal, type ChatConfig, type WakeInput } from '../../workflows/definitions/chat';
import { searchAttributes } from '../../workflows/definitions/search-attributes';

export type ChatSettings = Pick<Settings,
  'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_TURN_TIME_LIMIT_SECONDS' | 'AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS' | 'AGENT_GRANT_RENEW_SECONDS'
  | 'AGENT_CHAT_TURNS_PER_RUN' | 'AGENT_CHAT_IDLE_SECONDS' | 'AGENT_CHAT_ADMISSION_RETRY_SECONDS' | 'AGENT_TITLE_GENERATION_ENABLED' | 'TEMPORAL_CALL_TIMEOUT_SECONDS'>;

export function chatConfigFrom(settings: ChatSettings): ChatConfig {
  return {
    turnTimeLimitSeconds: settings.AGENT_TURN_TIME_LIMIT_SECONDS,
    heartbeatTimeoutSeconds: settings.AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS,
    grantRenewSeconds: settings.AGENT_GRANT_RENEW_SECONDS,
    idleSeconds: settings.AGENT_CHAT_IDLE_SECONDS,
    turnsPerRun: settings.AGENT_CHAT_TURNS_PER_RUN,
    admissionRetrySeconds: settings.AGENT_CHAT_ADMISSION_RETRY_SECONDS,
    generateTitles: settings.AGENT_TITLE_GENERATION_ENABLED,
  };
}

/** The chat a delivery is for; its profile is shown as a search attribute of a workflow it starts. */
export interface ChatRef {
  jobId: string;
  ownerId: number;
  executionProfile?: ExecutionProfile;
}

/** Start-time search attributes of a chat workflow: `AgentOwner`, and `AgentProfile` when known. */
function chatSearchAttributes(job: ChatRef): SearchAttributePair[] {
  return [
    { key: searchAttributes.owner, value: String(job.ownerId) },
    ...(job.executionProfile ? [{ key: searchAttributes.profile, value: job.executionProfile }] : []),
  ];
}

function startOperation(settings: ChatSettings, job: ChatRef) {
  return new WithStartWorkflowOperation<typeof chatWorkflow>(CHAT_WORKFLOW_TYPE, {
    workflowId: chatWorkflowId(job.jobId),
    taskQueue: settings.TEMPORAL_CONTROL_TASK_QUEUE,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ jobId: job.jobId, ownerId: job.ownerId, config: chatConfigFrom(settings) }],
    typedSearchAttributes: chatSearchAttributes(job),
    memo: { jobId: job.jobId, owner: job.ownerId },
  });
}

export class ChatDelivery {
  constructor(private readonly client: Client, private readonly settings: ChatSettings, private readonly log: Logger) {}

  /** Runs a Temporal call under the configured deadline, so an owner never waits long on a down server. */
  private bounded<T>(call: () => Promise<T>): Promise<T> {
    return this.client.connection.withDeadline(Date.now() + this.settings.TEMPORAL_CALL_TIMEOUT_SECONDS * 1000, call);
  }

  /** Delivers a queued turn; true when the workflow accepted it. */
  async submitTurn(job: ChatRef, turn: { turnId: string; seq: number }): Promise<boolean> {
    try {
      await this.bounded(() => this.client.workflow.executeUpdateWithStart(submitTurnUpdate, {
        args: [{ turnId: turn.turnId, seq: turn.seq }],
        startWorkflowOperation: startOperation(this.settings, job),
      }));
      return true;
    } catch (err) {
      this.log.warn({ event: 'agent_turn_delivery_deferred', job_id: job.jobId, seq: turn.seq, err: (err as Error).message }, 'turn queued; the chat workflow will pick it up when Temporal answers');
      return false;
    }
  }

  /**
   * Starts the chat workflow if needed and wakes it (reconciler, cancels, a host's claim).
   * `recheck`: the chat only looks at PostgreSQL again; an admission waiting for a slot is left waiting.
   */
  async wake(job: ChatRef, why: WakeInput = {}): Promise<boolean> {
    try {
      await this.bounded(() => this.client.workflow.signalWithStart<typeof chatWorkflow, [WakeInput?]>(CHAT_WORKFLOW_TYPE, {
        workflowId: chatWorkflowId(job.jobId),
        taskQueue: this.settings.TEMPORAL_CONTROL_TASK_QUEUE,
        args: [{ jobId: job.jobId, ownerId: job.ownerId, config: chatConfigFrom(this.settings) }],
        signal: wakeSignal,
        signalArgs: why.recheck === true ? [why] : [],
        typedSearchAttributes: chatSearchAttributes(job),
        memo: { jobId: job.jobId, owner: job.ownerId },
      }));
      return true;
    } catch (err) {
      this.log.warn({ event: 'agent_chat_wake_failed', job_id: job.jobId, err: (err as Error).message }, 'could not wake the chat workflow');
      return false;
    }
  }

  /** Asks the chat workflow to stop its running turn `seq`. */
  async cancelRunning(job: ChatRef, seq: number): Promise<boolean> {
    try {
      await this.bounded(() => this.client.workflow.getHandle(chatWorkflowId(job.jobId)).signal(cancelTurnSignal, { seq }));
      return true;
    } catch (err) {
      this.log.warn({ event: 'agent_turn_cancel_signal_failed', job_id: job.jobId, seq, err: (err as Error).message }, 'could not signal the chat workflow');
      return false;
    }
  }
}
