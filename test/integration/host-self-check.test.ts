/**
 * A workflow on the real Temporal dev server drives an activity on a host task queue that runs
 * a command inside a real `agent-sandbox:base` container.
 */
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createHostActivities } from '../../activities/host-activities';
import type { hostSelfCheck } from '../../workflows/host-self-check';
import { FailureType } from '../../workflows/definitions/failures';
import { HOST_SELF_CHECK_WORKFLOW_TYPE, hostSelfCheckWorkflowId } from '../../workflows/definitions/host-self-check';
import { hostTaskQueue } from '../../workflows/definitions/task-queues';
import { docker, TEST_DISK_ROOT, SANDBOX_IMAGE, testRunId } from '../support/docker';
import { temporalEnv, uniqueTaskQueue, workflowBundle } from '../support/temporal';

describe('host self-check workflow (Temporal + Docker)', () => {
  let env: TestWorkflowEnvironment;
  const hostId = `test-host-${testRunId}`;

  before(async () => {
    env = await temporalEnv();
  });

  async function runWith<T>(image: string, fn: (controlQueue: string) => Promise<T>): Promise<T> {
    const controlQueue = uniqueTaskQueue('control');
    const control = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: controlQueue,
      workflowBundle: await workflowBundle(),
    });
    const host = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: hostTaskQueue(hostId),
      activities: createHostActivities({ docker: docker(), hostId, image, sandboxDiskDir: TEST_DISK_ROOT }),
    });
    return control.runUntil(host.runUntil(fn(controlQueue)));
  }

  it('runs a command in a sandbox container on the host queue and removes the container', async () => {
    const workflowId = `${hostSelfCheckWorkflowId(hostId)}:${Date.now()}`;
    const result = await runWith(SANDBOX_IMAGE, (taskQueue) =>
      env.client.workflow.execute<typeof hostSelfCheck>(HOST_SELF_CHECK_WORKFLOW_TYPE, { taskQueue, workflowId, args: [{ hostId }] }));
    assert.equal(result.ok, true, `stderr: ${result.stderr}`);
    assert.equal(result.exitCode, 0);
    assert.equal(result.report.uid, '0');
    assert.match(result.report.debian ?? '', /^\d+\.\d+/);
    assert.match(result.report.git ?? '', /^\d+\.\d+/);
    assert.match(result.report.python ?? '', /^3\.\d+/);
    assert.equal(result.report.ca_certificates, 'present');

    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = history.events?.find((e) => e.activityTaskScheduledEventAttributes)?.activityTaskScheduledEventAttributes;
    assert.equal(scheduled?.taskQueue?.name, hostTaskQueue(hostId));

    const left = await docker().listContainers({ all: true, filters: { label: [`agent.workflow=${workflowId}`] } });
    assert.deepEqual(left, [], 'the sandbox container is removed after the command');
  });

  it('fails without retrying when the sandbox image is missing', async () => {
    const workflowId = `${hostSelfCheckWorkflowId(hostId)}:missing:${Date.now()}`;
    await assert.rejects(
      runWith('agent-sandbox:does-not-exist', (taskQueue) =>
        env.client.workflow.execute<typeof hostSelfCheck>(HOST_SELF_CHECK_WORKFLOW_TYPE, { taskQueue, workflowId, args: [{ hostId }] })),
      (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        const cause = err.cause as { cause?: { type?: string; message?: string } } | undefined;
        assert.equal(cause?.cause?.type, FailureType.imageMissing);
        return true;
      },
    );
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const started = history.events?.filter((e) => e.activityTaskStartedEventAttributes) ?? [];
    assert.equal(started.length, 1);
    assert.equal(started[0]?.activityTaskStartedEventAttributes?.attempt, 1, 'a non-retryable failure is attempted once');
  });
});
