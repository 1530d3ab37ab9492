/**
 * The control worker and the host runner as real child processes (`node dist/workers/*.js`, the
 * built code operators run), pointed at an agent stack's database, Temporal server, API and
 * gateway, so a test can kill -9 them mid-turn and start them again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { AgentStack } from './agent-stack';
import { DISPATCH_TOKEN } from './agent-stack';
import { TEST_DISK_ROOT } from './docker';
import { waitFor } from './wait';

const ROOT = join(__dirname, '../..');

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** SIGKILL, and waits for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

function commonEnv(stack: AgentStack): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'info',
    TEMPORAL_ADDRESS: stack.env.address,
    TEMPORAL_NAMESPACE: stack.env.namespace ?? 'default',
    TEMPORAL_CONTROL_TASK_QUEUE: stack.controlQueue,
    AGENT_GATEWAY_URL: stack.gateway.url,
    AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS: String(stack.settings.AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS),
    AGENT_GRANT_RENEW_SECONDS: String(stack.settings.AGENT_GRANT_RENEW_SECONDS),
    SHUTDOWN_GRACE_SECONDS: '5',
  };
}

async function start(script: string, env: Record<string, string>, ready: string): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--enable-source-maps', join(ROOT, script)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => output.includes(ready) || child.exitCode !== null, `${script} ready`, 60_000);
  if (child.exitCode !== null) throw new Error(`${script} exited early:\n${output}`);
  return {
    child,
    output: () => output,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `node dist/workers/control.js` for the stack (`extraEnv`: e.g. the object store's settings). */
export function startControlProcess(stack: AgentStack, extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
  return start('dist/workers/control.js', {
    ...commonEnv(stack), DATABASE_URL: stack.t.url, GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN,
    // The stack's own Schedule ids: the worker creates them at startup, the stack deletes them.
    AGENT_DELETION_SWEEP_SCHEDULE_ID: stack.settings.AGENT_DELETION_SWEEP_SCHEDULE_ID, AGENT_IDLE_STOP_SCHEDULE_ID: stack.settings.AGENT_IDLE_STOP_SCHEDULE_ID, ...extraEnv,
  }, 'control worker polling');
}

/** `node dist/workers/host.js` as the stack's enrolled host. */
export function startHostProcess(stack: AgentStack, objectStoreRoot: string, extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
  return start('dist/workers/host.js', {
    ...commonEnv(stack),
    AGENT_HOST_ID: stack.hostId, AGENT_HOST_CREDENTIAL: stack.hostCredential, AGENT_API_URL: stack.api.url,
    AGENT_HOST_SLOTS: String(stack.settings.AGENT_HOST_SLOTS), AGENT_HOST_HEARTBEAT_SECONDS: '1',
    OBJECT_STORE_FS_ROOT: objectStoreRoot, DOCKER_SOCKET_PATH: process.env.DOCKER_SOCKET_PATH ?? '/var/run/docker.sock',
    // The run's own disk directory, which the test run sweeps: the default (.data/sandbox-disks in
    // the checkout) would keep the disks of removed containers mounted after the run.
    AGENT_SANDBOX_DISK_DIR: TEST_DISK_ROOT, ...extraEnv,
  }, 'host runner polling');
}
