/**
 * `host-self-check:<hostId>`: proves an execution host can run sandboxes. Runs one command in a
 * fresh container from the sandbox image on the host's own task queue and reports what the
 * sandbox saw (user, OS release, tool versions). Operators start it from the Temporal UI or CLI.
 */
import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { HostActivities } from '../activities/host-activities';
import { HOST_SELF_CHECK_PERMANENT_FAILURES, type HostSelfCheckInput, type HostSelfCheckResult } from './definitions/host-self-check';
import { searchAttributes } from './definitions/search-attributes';
import { hostTaskQueue } from './definitions/task-queues';

/** The command run inside the sandbox; each line is `key=value`. */
export const SELF_CHECK_SCRIPT = [
  'echo "uid=$(id -u)"',
  'echo "debian=$(cat /etc/debian_version)"',
  'echo "git=$(git --version | cut -d" " -f3)"',
  'echo "python=$(python3 --version 2>&1 | cut -d" " -f2)"',
  'test -f /etc/ssl/certs/ca-certificates.crt && echo "ca_certificates=present"',
].join('; ');

export async function hostSelfCheck(input: HostSelfCheckInput): Promise<HostSelfCheckResult> {
  upsertSearchAttributes([
    { key: searchAttributes.host, value: input.hostId },
    { key: searchAttributes.state, value: 'running' },
  ]);
  const { runSandboxCommand } = proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(input.hostId),
    scheduleToStartTimeout: '2 minutes',
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '2 seconds', nonRetryableErrorTypes: [...HOST_SELF_CHECK_PERMANENT_FAILURES] },
  });
  const result = await runSandboxCommand({
    command: ['bash', '-c', SELF_CHECK_SCRIPT],
    labels: { 'agent.purpose': 'host-self-check', 'agent.workflow': workflowInfo().workflowId },
    timeoutMs: 60_000,
  });
  const report: Record<string, string> = {};
  for (const line of result.stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) report[line.slice(0, eq)] = line.slice(eq + 1).trim();
  }
  const ok = result.exitCode === 0;
  upsertSearchAttributes([{ key: searchAttributes.state, value: ok ? 'completed' : 'failed' }]);
  return { hostId: input.hostId, ok, exitCode: result.exitCode, report, stderr: result.stderr };
}
