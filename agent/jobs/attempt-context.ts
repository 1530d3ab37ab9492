/**
 * What a host runner needs to execute an admitted turn, read with its own credential and fenced to
 * the attempt (it must be the turn's current, running attempt on that host). Kept out of Temporal
 * history on purpose: the prompt is the owner's data and the environment may hold secrets.
 * Environment = platform base + the owner's global variables + the task's own overrides.
 */
import type { Db } from '../../lib/db';
import type { AgentDriverKind } from '../../lib/settings';
import { AppError } from '../../lib/errors';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type * as hostApi from '../../lib/contracts/host-api';
import type { TurnLimits } from '../settings/host-settings';

/** What the host runner reads (lib/contracts/host-api.ts `attemptContext`). */
export type AttemptContext = ResponseOf<typeof hostApi.attemptContext>;

/** The platform's base environment of every sandbox command. */
export function platformEnv(jobId: string): Record<string, string> {
  return { LANG: 'C.UTF-8', TZ: 'UTC', AGENT_JOB_ID: jobId };
}

interface Row {
  attempt_id: string;
  state: string;
  host_id: string;
  job_id: string;
  seq: number;
  prompt: string;
  model: string;
  driver: AgentDriverKind;
  env: Record<string, string>;
  owner_id: string;
  group_id: string | null;
  generation: number | null;
  container_name: string | null;
  uid: number | null;
  repo: string | null;
  /** Recorded at admission (host settings); null for attempts admitted before them. */
  limits: TurnLimits | null;
  forked_from_job_id: string | null;
  fork_anchor_seq: number | null;
  fork_historical: boolean;
  fork_prepared_at: Date | null;
}

/**
 * What the host's fork helper needs for a fork whose own session is not made yet: the original
 * member's UID (its session is the source). A fork whose original is gone (purged) has none to copy.
 */
async function forkSource(db: Db, row: Row): Promise<AttemptContext['fork']> {
  if (row.forked_from_job_id === null || row.fork_prepared_at !== null || row.fork_anchor_seq === null) return undefined;
  const member = await db('agent_sandbox_members').where({ job_id: row.forked_from_job_id, group_id: row.group_id }).first<{ uid: number } | undefined>('uid');
  if (!member) return undefined;
  return { from_job_id: row.forked_from_job_id, from_uid: member.uid, anchor_seq: row.fork_anchor_seq, historical: row.fork_historical };
}

/**
 * The context of `attemptId` for `hostId`; 409 when the attempt is not current on that host. The
 * limits are the attempt's own (recorded at admission); `turnTimeLimitSeconds` is only the
 * fallback for an attempt admitted before host settings. With `patchMaxBytes`, a chat with a
 * repository is told to capture its turn's diff up to that size.
 */
export async function attemptContext(db: Db, input: { hostId: string; attemptId: string; turnTimeLimitSeconds: number; patchMaxBytes?: number }): Promise<AttemptContext> {
  const row = await db('agent_attempts as a')
    .join('agent_turns as t', 't.turn_id', 'a.turn_id')
    .join('agent_jobs as j', 'j.job_id', 'a.job_id')
    .leftJoin('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .leftJoin('agent_sandbox_members as m', 'm.job_id', 'j.job_id')
    .where('a.attempt_id', input.attemptId)
    .first<Row | undefined>('a.attempt_id', 'a.state', 'a.host_id', 'a.job_id', 't.seq', 't.prompt', 'j.model', 'j.driver', 'j.env', 'j.owner_id',
      'j.group_id', 's.generation', 's.container_name', 'm.uid', 'a.limits', 'j.repo',
      'j.forked_from_job_id', 'j.fork_anchor_seq', 'j.fork_historical', 'j.fork_prepared_at');
  if (!row || row.host_id !== input.hostId || row.state !== 'running') throw new AppError('conflict', 'Attempt is not current');
  if (!row.group_id || row.generation === null || !row.container_name || row.uid === null) throw new AppError('conflict', 'Attempt has no sandbox');
  const owned = await db('agent_owner_variables').where({ user_id: row.owner_id }).select<Array<{ name: string; value: string }>>('name', 'value');
  const env: Record<string, string> = { ...platformEnv(row.job_id) };
  for (const variable of owned) env[variable.name] = variable.value;
  Object.assign(env, row.env);
  const fork = await forkSource(db, row);
  return {
    attempt_id: row.attempt_id, job_id: row.job_id, turn_seq: row.seq, prompt: row.prompt, model: row.model, driver: row.driver,
    group_id: row.group_id, generation: row.generation, container_name: row.container_name, uid: row.uid, env,
    turn_time_limit_seconds: row.limits?.turnTimeLimitSeconds ?? input.turnTimeLimitSeconds,
    // A chat with a repository has its turns' diffs captured for the publisher (docs/publisher.md); a temporary workspace has none.
    ...(row.repo !== null && input.patchMaxBytes !== undefined ? { capture: { max_bytes: input.patchMaxBytes } } : {}),
    ...(fork ? { fork } : {}),
    ...(row.limits ? {
      workspace_limits: {
        command_timeout_seconds: row.limits.commandTimeoutSeconds,
        command_output_max_bytes: row.limits.commandOutputMaxBytes,
        file_read_max_bytes: row.limits.fileReadMaxBytes,
      },
    } : {}),
  };
}
