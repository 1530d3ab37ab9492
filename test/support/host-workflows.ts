/**
 * Host workflows (`host:<hostId>`) in tests: a control worker that runs only their activities on
 * the test's own task queue, unique host ids (the dev server is shared by every test run, and a
 * workflow id names one host), and the cleanup that ends every host workflow a test started.
 */
import { Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createHostWorkflowActivities } from '../../activities/control/host-workflow-activities';
import type { Db } from '../../lib/db';
import { hostStatusQuery, hostWorkflowId, type HostWorkflowStatus } from '../../workflows/definitions/host';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { testRunId } from './docker';
import { workflowBundle } from './temporal';

/** A host id no other test (or test run) uses: `<prefix>-<run>-<random>`. */
export function uniqueHostId(prefix: string): string {
  return `${prefix}-${testRunId}-${Math.random().toString(36).slice(2, 8)}`.toLowerCase().replace(/[^a-z0-9._-]/g, '-').slice(0, 63);
}

/** A worker on `taskQueue` with the host workflow's activities over `db`; `close` stops it. */
export async function startHostWorker(env: TestWorkflowEnvironment, db: Db, taskQueue: string): Promise<{ close(): Promise<void> }> {
  const worker = await Worker.create({
    connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue,
    workflowBundle: await workflowBundle(),
    activities: createHostWorkflowActivities({ db }),
  });
  const running = worker.run();
  return {
    async close() {
      worker.shutdown();
      await running;
    },
  };
}

/** The `AgentState` search attribute of a host's workflow (undefined before it is shown). */
export async function hostWorkflowState(client: Client, hostId: string): Promise<string | undefined> {
  const description = await client.workflow.getHandle(hostWorkflowId(hostId)).describe();
  return description.typedSearchAttributes.get(searchAttributes.state);
}

/** The host workflow's own account of a pending change and drain. */
export function hostWorkflowStatus(client: Client, hostId: string): Promise<HostWorkflowStatus> {
  return client.workflow.getHandle(hostWorkflowId(hostId)).query(hostStatusQuery);
}

/** Terminates the host workflows of `hostIds` that still run (a test's cleanup). */
export async function endHostWorkflows(client: Client, hostIds: Iterable<string>): Promise<void> {
  for (const hostId of hostIds) {
    await client.workflow.getHandle(hostWorkflowId(hostId)).terminate('test finished').catch(() => undefined);
  }
}
