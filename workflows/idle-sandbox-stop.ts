/**
 * The idle stop (host setting `idle_timeout_seconds`; docs/sandboxes.md "Idle stop"), started every
 * minute by the Schedule `agent-idle-sandbox-stop` (overlap SKIP: one run at a time). Each run:
 *
 * 1. reads the setting now and, unless it is "never", finds running groups idle past it
 *    (`findIdleSandboxes`: oldest first, at most `maxGroups`; the rest wait for the next minute);
 * 2. for each, ONE AT A TIME, sends the operators' "Stop idle" as the idle stopper to
 *    `sandbox:<groupId>` (`stopIdleSandbox`), whose claim checks every condition again. It does not
 *    wait for the stop to finish: the group's workflow carries it out and records its outcome.
 *
 * Every activity has bounded retries and a refusal is an answer, so a run always ends (a stuck run
 * would make the Schedule skip every later minute).
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { IdleStopActivities } from '../activities/control/idle-stop-activities';
import type { IdleSandboxStopInput, IdleSandboxStopResult, IdleStopOutcome } from './definitions/idle-sandbox-stop';

/** Reading PostgreSQL: a few quick tries, then the run ends (the next minute tries again). */
const records = proxyActivities<IdleStopActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** Sending a stop: the delivery waits up to 90 s for the group workflow's answer; not retried here. */
const sends = proxyActivities<IdleStopActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 1 },
});

function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

export async function idleSandboxStopWorkflow(input: IdleSandboxStopInput): Promise<IdleSandboxStopResult> {
  const found = await records.findIdleSandboxes({ maxGroups: input.maxGroups });
  const result: IdleSandboxStopResult = { idleTimeoutSeconds: found.idleTimeoutSeconds, stopped: [], refused: [], failed: [] };
  for (const sandbox of found.sandboxes) {
    let outcome: IdleStopOutcome;
    try {
      outcome = await sends.stopIdleSandbox(sandbox);
    } catch (err) {
      if (isCancellation(err)) throw err;
      outcome = { kind: 'failed', reason: messageOf(err) };
    }
    if (outcome.kind === 'accepted') result.stopped.push(sandbox.groupId);
    else result[outcome.kind].push({ groupId: sandbox.groupId, reason: outcome.reason });
  }
  return result;
}
