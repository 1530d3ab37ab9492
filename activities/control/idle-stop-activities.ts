/**
 * Control-queue activities of the idle stop (`workflows/idle-sandbox-stop.ts`; docs/sandboxes.md
 * "Idle stop"): thin Temporal adapters over agent/sandboxes/idle-stop.ts. The host setting
 * `idle_timeout_seconds` is read from the synced settings at each run, so a change applies at the
 * next minute. A stop's refusal or failure is an answer, not an error: the run goes on with the
 * next group, and the minute after tries again.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { findIdleSandboxes, requestIdleStop } from '../../agent/sandboxes/idle-stop';
import type { IdleSandbox, IdleStopOutcome } from '../../workflows/definitions/idle-sandbox-stop';

export interface IdleStopActivityDeps {
  db: Db;
  /** Sends the stops (absent: every stop fails, and is tried again next minute). */
  temporal?: Client;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS'>;
  /** The host setting `idle_timeout_seconds` now (null: never). */
  idleTimeoutSeconds: () => number | null;
  log: Logger;
}

export function createIdleStopActivities(deps: IdleStopActivityDeps) {
  const { db, settings, log } = deps;
  return {
    /** The idle timeout now and, unless it is "never", the groups idle past it (at most `maxGroups`). */
    async findIdleSandboxes(input: { maxGroups: number }): Promise<{ idleTimeoutSeconds: number | null; sandboxes: IdleSandbox[] }> {
      const idleTimeoutSeconds = deps.idleTimeoutSeconds();
      if (idleTimeoutSeconds === null) return { idleTimeoutSeconds, sandboxes: [] };
      const sandboxes = await findIdleSandboxes(db, { idleSeconds: idleTimeoutSeconds, staleSeconds: settings.AGENT_HOST_STALE_SECONDS, limit: input.maxGroups });
      return { idleTimeoutSeconds, sandboxes };
    },

    /** Sends "Stop idle" for one group as the idle stopper; what became of it (never throws for a refusal or an unanswered action). */
    async stopIdleSandbox(input: IdleSandbox): Promise<IdleStopOutcome> {
      const outcome: IdleStopOutcome = deps.temporal
        ? await requestIdleStop({ db, temporal: deps.temporal, settings }, input)
        : { kind: 'failed', reason: 'The control worker has no Temporal client to send sandbox actions with' };
      const line = { event: `agent_sandbox_idle_stop_${outcome.kind}`, group_id: input.groupId, last_activity_at: input.lastActivityAt, ...('reason' in outcome ? { reason: outcome.reason } : {}) };
      if (outcome.kind === 'failed') log.warn(line, 'idle sandbox stop could not be sent; trying again next minute');
      else log.info(line, `idle sandbox stop ${outcome.kind}`);
      return outcome;
    },
  };
}

export type IdleStopActivities = ReturnType<typeof createIdleStopActivities>;
