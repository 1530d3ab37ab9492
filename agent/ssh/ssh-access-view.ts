/**
 * What a chat's page shows about SSH (docs/ssh.md "Owner view"): the `ssh <job_id>@<host> -p
 * <port>` line when the chat's sandbox is on a host whose SSH server is on, and why not otherwise.
 */
import type { Db } from '../../lib/db';

export type SshUnavailable = 'no_sandbox' | 'host_ssh_off' | 'sandbox_not_running';

export interface SshAccessView {
  job_id: string;
  /** True when the command below would reach the sandbox now (given a registered key). */
  available: boolean;
  /** Why not, when not available. */
  reason: SshUnavailable | null;
  /** `ssh <job_id>@<host> -p <port>`, when the sandbox's host runs an SSH server. */
  command: string | null;
  host: string | null;
  port: number | null;
  /** How many SSH keys the owner has registered (none: register one first). */
  keys: number;
}

interface Row { state: string | null; pending_action: string | null; ssh_host: string | null; ssh_port: number | null }

export async function sshAccessView(db: Db, job: { job_id: string; owner_id: string | number }): Promise<SshAccessView> {
  const row = await db('agent_jobs as j')
    .leftJoin('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .leftJoin('agent_hosts as h', 'h.host_id', 's.host_id')
    .where('j.job_id', job.job_id)
    .first<Row | undefined>('s.state', 's.pending_action', 'h.ssh_host', 'h.ssh_port');
  const count = await db('agent_ssh_keys').where({ user_id: job.owner_id }).count<{ count: string }[]>('* as count').first();
  const keys = Number(count?.count ?? 0);
  const base = { job_id: job.job_id, keys };
  if (!row || row.state === null) return { ...base, available: false, reason: 'no_sandbox', command: null, host: null, port: null };
  if (row.ssh_host === null || row.ssh_port === null) return { ...base, available: false, reason: 'host_ssh_off', command: null, host: null, port: null };
  const command = `ssh ${job.job_id}@${row.ssh_host} -p ${row.ssh_port}`;
  const running = row.state === 'running' && row.pending_action === null;
  return { ...base, available: running, reason: running ? null : 'sandbox_not_running', command, host: row.ssh_host, port: row.ssh_port };
}
