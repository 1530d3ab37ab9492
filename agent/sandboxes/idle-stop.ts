/**
 * The idle stop (host setting `idle_timeout_seconds`; docs/sandboxes.md "Idle stop"): a running
 * sandbox group whose last activity (`last_activity_at`: a turn's admission, its container
 * recorded, its end) is older than the timeout is stopped by the operators' own "Stop idle"
 * action, sent to its workflow `sandbox:<groupId>` (agent/sandboxes/sandbox-delivery.ts) with the
 * review values read from its row and the actor `system:idle-sandbox-stopper`. So every condition
 * of that action holds exactly as for an operator: the claim refuses a group that is busy, has an
 * action pending, or whose container, generation or last activity changed since it was read; new
 * turns wait while the stop is pending; the container and its workspace are kept, and the chat's
 * next turn starts the same container again. The action's own audit rows name the system actor.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { IdleSandbox, IdleStopOutcome } from '../../workflows/definitions/idle-sandbox-stop';
import type { SandboxActionRequest } from '../../workflows/definitions/sandbox-group';
import { IDLE_SANDBOX_STOPPER } from '../audit/audit-log';
import { systemRequestActor } from './action-outcome';
import { sendSandboxAction, type SandboxDeliverySettings } from './sandbox-delivery';

interface IdleRow {
  group_id: string;
  generation: number;
  container_id: string;
  last_activity_at: Date;
}

/**
 * Running groups idle for at least `idleSeconds` (by the database clock), oldest activity first, at
 * most `limit`: no action pending, a recorded container, on a host that is online (a heartbeat
 * within `staleSeconds`, not removed: a stale host could not carry the stop out), and no turn of
 * theirs running or queued (a queued turn is about to use the container). The claim checks its
 * own conditions again; this only picks whom to ask.
 */
export async function findIdleSandboxes(db: Db, input: { idleSeconds: number; staleSeconds: number; limit: number }): Promise<IdleSandbox[]> {
  const members = (state: 'running' | 'queued', table: 'agent_attempts' | 'agent_turns') => db(`${table} as x`)
    .join('agent_sandbox_members as m', 'm.job_id', 'x.job_id')
    .whereRaw('m.group_id = s.group_id').where('x.state', state).select(db.raw('1'));
  const rows = await db('agent_sandboxes as s').join('agent_hosts as h', 'h.host_id', 's.host_id')
    .where('s.state', 'running').whereNull('s.pending_action').whereNotNull('s.container_id')
    .whereRaw('s.last_activity_at <= now() - make_interval(secs => ?)', [input.idleSeconds])
    .whereNull('h.removed_at')
    .whereRaw('h.last_heartbeat_at > now() - make_interval(secs => ?)', [input.staleSeconds])
    .whereNotExists(members('running', 'agent_attempts'))
    .whereNotExists(members('queued', 'agent_turns'))
    .orderBy([{ column: 's.last_activity_at' }, { column: 's.group_id' }])
    .limit(input.limit)
    .select<IdleRow[]>('s.group_id', 's.generation', 's.container_id', 's.last_activity_at');
  return rows.map((r) => ({ groupId: r.group_id, generation: r.generation, containerId: r.container_id, lastActivityAt: r.last_activity_at.toISOString() }));
}

/**
 * Sends "Stop idle" for `sandbox` as the idle stopper: `accepted` with the group's state, `refused`
 * with the reason (the claim's own audit row records it; a group gone is refused too), or `failed`
 * when it cannot be decided now (Temporal or PostgreSQL did not answer; tried again next minute).
 */
export async function requestIdleStop(deps: { db: Db; temporal: Client; settings: SandboxDeliverySettings }, sandbox: IdleSandbox): Promise<IdleStopOutcome> {
  const request: SandboxActionRequest = {
    action: 'stop', generation: sandbox.generation, containerId: sandbox.containerId, lastActivityAt: sandbox.lastActivityAt,
    actor: systemRequestActor(IDLE_SANDBOX_STOPPER),
  };
  try {
    return { kind: 'accepted', state: (await sendSandboxAction(deps, sandbox.groupId, request)).state };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return err.code === 'conflict' || err.code === 'not_found' ? { kind: 'refused', reason: err.message } : { kind: 'failed', reason: err.message };
  }
}
