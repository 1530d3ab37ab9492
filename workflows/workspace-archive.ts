/**
 * `workspace-archive:<jobId>:<requestId>`: one owner download of a chat's `/workspace`. Runs on
 * the control task queue; its one activity runs on the sandbox's host (`host:<hostId>`), measures
 * the workspace and, when within the limit, stores a gzipped tar in the object store. The API
 * streams that object to the owner and deletes it.
 */
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { SandboxActivities } from '../activities/sandbox-activities';
import { searchAttributes } from './definitions/search-attributes';
import { hostTaskQueue } from './definitions/task-queues';
import { WORKSPACE_ARCHIVE_PERMANENT_FAILURES, type WorkspaceArchiveInput, type WorkspaceArchiveResult } from './definitions/workspace-archive';

export async function workspaceArchive(input: WorkspaceArchiveInput): Promise<WorkspaceArchiveResult> {
  upsertSearchAttributes([{ key: searchAttributes.host, value: input.hostId }]);
  const { buildWorkspaceArchive } = proxyActivities<SandboxActivities>({
    taskQueue: hostTaskQueue(input.hostId),
    // A host that does not pick the work up within a minute is offline: answer now, not later.
    scheduleToStartTimeout: '1 minute',
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '1 second', nonRetryableErrorTypes: [...WORKSPACE_ARCHIVE_PERMANENT_FAILURES] },
  });
  return buildWorkspaceArchive({ containerName: input.containerName, key: input.key, maxBytes: input.maxBytes });
}
