/**
 * The workspace-archive workflow's public surface (`workspace-archive:<jobId>:<requestId>`):
 * workflow type and id, input, result and the failure types the API maps to answers.
 */
import { FailureType } from './failures';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const WORKSPACE_ARCHIVE_WORKFLOW_TYPE = 'workspaceArchive';

/** Workflow id of one workspace download (`requestId` makes concurrent downloads distinct). */
export function workspaceArchiveWorkflowId(jobId: string, requestId: string): string {
  return `workspace-archive:${jobId}:${requestId}`;
}

export interface WorkspaceArchiveInput {
  jobId: string;
  hostId: string;
  containerName: string;
  /** Object key for the archive. */
  key: string;
  /** Largest workspace accepted, bytes before compression. */
  maxBytes: number;
}

/** What the host activity stored (or why not): the workflow's result. */
export type WorkspaceArchiveResult =
  | { status: 'stored'; key: string; bytes: number; sha256: string; workspaceBytes: number }
  | { status: 'too_large'; workspaceBytes: number; maxBytes: number };

/** Failure types of the host activity that retrying cannot fix; the API answers 409 for `SandboxMissing`. */
export const WORKSPACE_ARCHIVE_PERMANENT_FAILURES: readonly FailureType[] = [FailureType.sandboxMissing, FailureType.objectStoreMissing];
