/**
 * A chat with a real retained sandbox for SSH tests: the job, sandbox group and member rows in
 * PostgreSQL (as placement and the host runner leave them) and the group container itself, made
 * by `ensureSandboxContainer` on the real Docker engine; plus the real OpenSSH client.
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Db } from '../../lib/db';
import { newId } from '../../agent/jobs/job-store';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/docker/sandbox-command';
import { ensureSandboxContainer } from '../../activities/docker/sandbox-container';
import { createJob } from './agent-records';
import { docker, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRuntime } from './docker';
import { TEST_MEMBER_UID } from './member-sandbox';

export interface SshChat {
  jobId: string;
  groupId: string;
  containerName: string;
  uid: number;
}

/** A chat of `ownerId` whose sandbox runs on `hostId`. */
export async function startSshChat(db: Db, ownerId: number, hostId: string): Promise<SshChat> {
  const jobId = await createJob(db, ownerId, hostId);
  const groupId = newId('grp');
  const { containerName } = await ensureSandboxContainer(docker(), {
    jobId, groupId, generation: 1, attemptId: newId('att'), hostId, uid: TEST_MEMBER_UID,
    image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: DEFAULT_SANDBOX_LIMITS, extraLabels: testLabels(),
  });
  await db('agent_sandboxes').insert({ group_id: groupId, host_id: hostId, container_name: containerName, generation: 1, state: 'running' });
  await db('agent_sandbox_members').insert({ job_id: jobId, group_id: groupId, uid: TEST_MEMBER_UID });
  await db('agent_jobs').where({ job_id: jobId }).update({ group_id: groupId });
  return { jobId, groupId, containerName, uid: TEST_MEMBER_UID };
}

/** A new key pair by `ssh-keygen` in `dir`: the private key's path and the `.pub` line. */
export async function generateKey(dir: string, name: string, type: 'ed25519' | 'rsa' | 'ecdsa' = 'ed25519', bits?: number): Promise<{ path: string; publicKey: string }> {
  const path = join(dir, name);
  await promisify(execFile)('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', `${name}@test`, '-f', path]);
  const { stdout } = await promisify(execFile)('cat', [`${path}.pub`]);
  return { path, publicKey: stdout.trim() };
}

export interface SshRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `ssh -i key -p port user@127.0.0.1 command` in batch mode, trusting the server's key. */
export function runSsh(options: { key: string; port: number; user: string; command: string; tty?: boolean }): { done: Promise<SshRun>; stdout(): string; kill(): void } {
  const args = [
    '-i', options.key, '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes',
    '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=10',
    ...(options.tty ? ['-tt'] : ['-T']), '-p', String(options.port), `${options.user}@127.0.0.1`, options.command,
  ];
  const child = spawn('ssh', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const done = new Promise<SshRun>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  return { done, stdout: () => stdout, kill: () => child.kill('SIGKILL') };
}
