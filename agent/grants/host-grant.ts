/**
 * A host runner fetches its turn's inference grant from the API (docs/agent-grants.md), so the
 * token never travels through Temporal history:
 * `POST /v1/agent/hosts/:hostId/attempts/:attemptId/grant` with the host credential. The attempt
 * must be this host's, `running`, and its residency alive (host heartbeating, not being removed);
 * the grant names the job's owner and model and the member residency (job, attempt, host, sandbox
 * group, generation). Fetching again rotates the token.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type { attemptGrant } from '../../lib/contracts/host-api';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { residencyAlive } from './residency';
import { GrantDispatchError, type GatewayGrantClient } from './gateway-grant-client';

/** The host's turn grant (lib/contracts/host-api.ts `attemptGrant`). */
export type HostGrantResponse = ResponseOf<typeof attemptGrant>;

interface AttemptJob {
  attempt_id: string;
  job_id: string;
  owner_id: string;
  model: string;
  group_id: string | null;
  attempt_generation: number | null;
  sandbox_generation: number | null;
}

/** The dispatch client, or 503 when the API has no gateway grant dispatch configured. */
export function grantClientOr503(grants: GatewayGrantClient | undefined): GatewayGrantClient {
  if (!grants) throw new AppError('service_unavailable', 'Inference grants are not configured (AGENT_GATEWAY_URL and GATEWAY_GRANT_DISPATCH_TOKEN)');
  return grants;
}

/**
 * Maps a refused or failed dispatch call to the API's error, in the API's own words (the
 * gateway's text goes to `log` only, as `agent_grant_dispatch_failed`): 404 for a model the
 * gateway does not know, 409 for a grant it will not issue (owner suspended, grant revoked),
 * 504 when it did not answer in time, else 502.
 */
export function dispatchFailure(err: unknown, context: { model: string; log: Logger }): unknown {
  if (!(err instanceof GrantDispatchError)) return err;
  context.log.warn({ event: 'agent_grant_dispatch_failed', status: err.status, code: err.code, timed_out: err.timedOut, model: context.model, detail: err.message }, 'grant dispatch at the gateway failed');
  const options = { cause: err };
  if (err.status === 404 && err.code === 'model_not_found') return new AppError('model_not_found', `The model '${context.model}' does not exist`, { ...options, param: 'model' });
  if (err.status === 404 || err.status === 409) return new AppError('conflict', 'The gateway will not issue this inference grant (the account is suspended or unknown, or the grant was revoked)', options);
  if (err.timedOut) return new AppError('gateway_timeout', 'The gateway did not answer the grant request in time', options);
  return new AppError('upstream_error', 'The gateway could not issue the inference grant', options);
}

/** Issues (or rotates) the inference grant of a host's running attempt. */
export async function issueHostGrant(options: {
  db: Db;
  grants: GatewayGrantClient;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'AGENT_GRANT_TTL_SECONDS'>;
  hostId: string;
  attemptId: string;
  log: Logger;
}): Promise<HostGrantResponse> {
  const { db, hostId, attemptId } = options;
  const row = await db('agent_attempts as a')
    .join('agent_jobs as j', 'j.job_id', 'a.job_id')
    .leftJoin('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .where({ 'a.attempt_id': attemptId, 'a.host_id': hostId, 'a.state': 'running' })
    .whereNull('j.deleted_at')
    .first<AttemptJob | undefined>(
      'a.attempt_id', 'a.job_id', 'j.owner_id', 'j.model', 'j.group_id',
      'a.generation as attempt_generation', 's.generation as sandbox_generation',
    );
  if (!row) throw new AppError('conflict', 'Attempt is not current');
  const generation = row.sandbox_generation ?? row.attempt_generation;
  const residency = { attemptId, hostId, groupId: row.group_id, generation };
  if (!(await residencyAlive(db, residency, options.settings.AGENT_HOST_STALE_SECONDS))) throw new AppError('conflict', 'Attempt is not current');
  try {
    const issued = await options.grants.issue({
      userId: Number(row.owner_id), model: row.model, kind: 'turn', jobId: row.job_id, attemptId, hostId,
      groupId: row.group_id, generation, ttlSeconds: options.settings.AGENT_GRANT_TTL_SECONDS,
    });
    return { grant_id: issued.grantId, token: issued.token, expires_at: issued.expiresAt, model: issued.model };
  } catch (err) {
    throw dispatchFailure(err, { model: row.model, log: options.log });
  }
}
