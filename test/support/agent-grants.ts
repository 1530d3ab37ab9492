/**
 * Inference-grant helpers for tests: the dispatch token, calls of the gateway's dispatch
 * endpoints, owners, and the rows of a running turn's residency (host, job, turn, attempt,
 * sandbox group) so grant checks have something real to look at.
 */
import type { Db } from '../../lib/db';
import { startTestGateway, type TestGateway } from './gateway';
import { enrollHost } from '../../agent/hosts/host-registry';
import { newId } from '../../agent/jobs/job-store';

export const DISPATCH_TOKEN = 'grant-dispatch-token-for-tests-0123456789';

export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
}

/** POSTs JSON to `url` with an optional bearer token; parses the JSON answer. */
export async function postWith<T = Record<string, unknown>>(url: string, body: unknown, token: string | null): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

/** Calls a dispatch endpoint of the gateway at `gatewayUrl` (`path` under `/internal/agent/grants`). */
export function dispatch<T = Record<string, unknown>>(gatewayUrl: string, path: string, body: unknown, token: string | null = DISPATCH_TOKEN): Promise<JsonResponse<T>> {
  return postWith<T>(`${gatewayUrl}/internal/agent/grants${path}`, body, token);
}

/** The error message of an error answer. */
export function messageOf(response: JsonResponse<unknown>): string {
  return (response.body as { error?: { message?: string } }).error?.message ?? '';
}

/** Inserts an account; returns its id. */
export async function insertOwner(db: Db, email: string, options: { role?: string; permissions?: string[] } = {}): Promise<number> {
  const [row] = await db('users').insert({ email, role: options.role ?? 'pro', permissions: options.permissions ?? ['agent.use'] }).returning<Array<{ id: string }>>(['id']);
  return Number(row!.id);
}

export interface Residency {
  hostId: string;
  hostCredential: string;
  jobId: string;
  turnId: string;
  attemptId: string;
  groupId: string;
  generation: number;
}

/** Enrolls a heartbeating host and puts a running attempt of a new job of `ownerId` on it, in a running sandbox group. */
export async function insertResidency(db: Db, options: { ownerId: number; model: string; hostId: string }): Promise<Residency> {
  const { credential } = await enrollHost(db, options.hostId);
  await db('agent_hosts').where({ host_id: options.hostId }).update({ last_heartbeat_at: db.fn.now(), slots_total: 4 });
  const jobId = newId('job');
  const groupId = newId('grp');
  const turnId = newId('turn');
  const attemptId = newId('att');
  await db('agent_sandboxes').insert({ group_id: groupId, host_id: options.hostId, container_name: `sbx-${groupId}`, generation: 3, state: 'running' });
  await db('agent_jobs').insert({ job_id: jobId, owner_id: options.ownerId, title: 't', model: options.model, host_id: options.hostId, group_id: groupId });
  await db('agent_turns').insert({ turn_id: turnId, job_id: jobId, seq: 1, prompt: 'p', state: 'running', attempt_id: attemptId });
  await db('agent_attempts').insert({ attempt_id: attemptId, turn_id: turnId, job_id: jobId, host_id: options.hostId, state: 'running', generation: 3 });
  return { hostId: options.hostId, hostCredential: credential, jobId, turnId, attemptId, groupId, generation: 3 };
}

/** A gateway with one chat model `m` on `upstreamUrl`, auth on and the test dispatch token. */
export function startGrantGateway(db: Db, upstreamUrl: string): Promise<TestGateway> {
  return startTestGateway({
    db,
    modelsYaml: `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstreamUrl}" }\n`,
    env: { USER_AUTH_ENABLED: 'true', GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN, AUTH_KEY_REFRESH_SECONDS: '0.2' },
  });
}
