/**
 * `<cluster dir>/cluster.json`: what `npm run cluster` started (the plan, the environment it added
 * for every member, the supervisor's pid), so `stop`, `status` and `start <name>` work from any
 * terminal. Mode 600 in a 700 directory: the environment holds the stack's secrets (the same ones
 * `.data/secrets/` keeps) and the hosts' credentials.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DATA } from '../dev/sh';
import type { MemberSpec } from './plan';

export interface ClusterState {
  /** Pid of the foreground `npm run cluster` (it stops every member on Ctrl-C or SIGTERM). */
  supervisorPid: number;
  databaseUrl: string;
  balancerPort: number;
  /** Start phases, in order. */
  phases: MemberSpec[][];
  /** Added to the caller's environment for every member (a member's own `env` on top). */
  env: Record<string, string>;
}

/** The cluster directory: `CLUSTER_DIR`, else `.data/cluster`. */
export function clusterDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.CLUSTER_DIR || join(DATA, 'cluster'));
}

const stateFile = (dir: string): string => join(dir, 'cluster.json');

export function writeState(dir: string, state: ClusterState): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(stateFile(dir), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

export function readState(dir: string): ClusterState | undefined {
  const file = stateFile(dir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ClusterState) : undefined;
}

/** Every member, in start order. */
export function allMembers(state: ClusterState): MemberSpec[] {
  return state.phases.flat();
}

/** Whether a process with this pid exists (the supervisor is a `tsx` process; checked by signal 0). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/status`, 'utf8').includes('State:\tZ');
  } catch {
    return false;
  }
}
