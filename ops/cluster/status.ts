/**
 * `npm run cluster -- status`: one line per member with its pid, port and health. Health is what
 * each kind can say: the gateways and the API answer `GET /health`; HAProxy answers through its
 * port, and says which gateways it has in rotation (its admin socket); a host runner's last
 * heartbeat as the API recorded it (healthy within `AGENT_HOST_STALE_SECONDS`); a control worker is
 * healthy while its process runs (it has no port).
 */
import { createDb } from '../../lib/db';
import { readBackendStates } from './haproxy';
import { answers200, runningPid } from './members';
import { haproxySocket, type MemberSpec } from './plan';
import { allMembers, type ClusterState } from './state';

export interface MemberStatus {
  name: string;
  pid: number | undefined;
  port: number | undefined;
  healthy: boolean;
  detail: string;
}

async function heartbeatAges(databaseUrl: string, hostIds: string[]): Promise<Map<string, number | null>> {
  const db = createDb({ url: databaseUrl, applicationName: 'cluster-status' });
  try {
    const rows = await db('agent_hosts').whereIn('host_id', hostIds)
      .select<Array<{ host_id: string; age: string | null }>>('host_id', db.raw('extract(epoch from now() - last_heartbeat_at) as age'));
    return new Map(rows.map((r) => [r.host_id, r.age === null ? null : Number(r.age)]));
  } catch {
    return new Map();
  } finally {
    await db.destroy();
  }
}

async function memberStatus(dir: string, spec: MemberSpec, context: { pool: Map<string, string>; beats: Map<string, number | null>; staleSeconds: number }): Promise<MemberStatus> {
  const pid = runningPid(dir, spec);
  const base = { name: spec.name, pid, port: spec.port };
  if (pid === undefined) return { ...base, healthy: false, detail: 'not running' };
  if ('health' in spec.ready) {
    const ok = await answers200(spec.ready.health);
    const rotation = spec.kind === 'gateway' ? `, balancer: ${context.pool.get(spec.name) ?? 'unknown'}` : '';
    const pool = spec.kind === 'balancer' ? `, pool ${[...context.pool].map(([n, s]) => `${n} ${s}`).join(', ') || 'unreadable'}` : '';
    return { ...base, healthy: ok, detail: `GET /health ${ok ? '200' : 'failed'}${rotation}${pool}` };
  }
  if (spec.kind === 'host') {
    const age = context.beats.get(spec.hostId!);
    if (age === undefined || age === null) return { ...base, healthy: false, detail: `host ${spec.hostId}: no heartbeat recorded` };
    return { ...base, healthy: age < context.staleSeconds, detail: `host ${spec.hostId}, queue host:${spec.hostId}, last heartbeat ${Math.round(age)} s ago` };
  }
  return { ...base, healthy: true, detail: 'running' };
}

/** The status of every member. */
export async function clusterStatus(dir: string, state: ClusterState, staleSeconds: number): Promise<MemberStatus[]> {
  const members = allMembers(state);
  const hostIds = members.flatMap((m) => (m.hostId ? [m.hostId] : []));
  const [pool, beats] = await Promise.all([readBackendStates(haproxySocket(dir)), heartbeatAges(state.databaseUrl, hostIds)]);
  return Promise.all(members.map((spec) => memberStatus(dir, spec, { pool, beats, staleSeconds })));
}

export function formatStatus(rows: readonly MemberStatus[]): string {
  const pad = (s: string, n: number) => s.padEnd(n);
  return rows.map((r) => `${pad(r.name, 10)} ${pad(r.pid === undefined ? '-' : String(r.pid), 8)} ${pad(r.port === undefined ? '-' : String(r.port), 6)} ${pad(r.healthy ? 'healthy' : 'DOWN', 8)} ${r.detail}`).join('\n');
}
