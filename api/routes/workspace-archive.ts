/**
 * `GET /v1/agent/jobs/:jobId/workspace/archive` (owner): the gzipped tar of the chat's whole
 * `/workspace` (docs/sandboxes.md "Workspace download"). The API never talks to Docker: it runs
 * `workspace-archive:<jobId>:<uuid>` whose activity on the sandbox's host stores the archive in the
 * object store, then streams that object to the owner and deletes it once the response is over
 * (completed or abandoned: an abandoned download is one info line, not an error). 413 above
 * `WORKSPACE_DOWNLOAD_MAX_MIB` (measured before compression); 409 while the chat has no sandbox.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { requireTemporal } from '../../lib/temporal';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { ApiDeps } from '../deps';
import { AppError } from '../../lib/errors';
import { requireOwner, ownerOf, type AgentState } from '../auth/principals';
import { findOwnedJob } from '../../agent/jobs/job-store';
import { sandboxContainerName } from '../../agent/sandboxes/names';
import type { workspaceArchive } from '../../workflows/workspace-archive';
import { FailureType } from '../../workflows/definitions/failures';
import {
  WORKSPACE_ARCHIVE_WORKFLOW_TYPE, workspaceArchiveWorkflowId, type WorkspaceArchiveInput, type WorkspaceArchiveResult,
} from '../../workflows/definitions/workspace-archive';

interface SandboxRow {
  host_id: string;
  container_name: string;
  state: string;
}

const MIB = 1024 * 1024;

export function workspaceArchiveRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/jobs/:jobId/workspace/archive', owner, async (ctx) => {
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerOf(ctx.state).userId);
    const store = deps.objectStore;
    if (!store) throw new AppError('service_unavailable', 'Workspace downloads need an object store, and none is configured');
    const target = await sandboxOf(deps, job.group_id, job.host_id);
    // The archive workflow runs to its end before this answers: with Temporal away it would wait that long.
    await requireTemporal(deps.temporal, deps.settings.TEMPORAL_CALL_TIMEOUT_SECONDS, 'no archive was started');
    const requestId = randomUUID();
    const input: WorkspaceArchiveInput = {
      jobId: job.job_id,
      hostId: target.hostId,
      containerName: target.containerName,
      key: `workspace-archives/${job.job_id}/${requestId}.tar.gz`,
      maxBytes: deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB * MIB,
    };
    const result = await runArchiveWorkflow(deps, input, requestId);
    if (result.status === 'too_large') {
      throw new AppError('payload_too_large', `The workspace is ${(result.workspaceBytes / MIB).toFixed(1)} MiB, more than the download limit of ${deps.settings.WORKSPACE_DOWNLOAD_MAX_MIB} MiB`);
    }
    const removeObject = () => {
      store.delete(result.key).catch((err: unknown) => deps.log.warn({ err, key: result.key }, 'workspace archive object not deleted'));
    };
    let body;
    try {
      body = await store.get(result.key);
    } catch (err) {
      removeObject();
      throw err;
    }
    ctx.status = 200;
    ctx.set('content-type', 'application/gzip');
    ctx.set('content-length', String(result.bytes));
    ctx.set('content-disposition', `attachment; filename="${job.job_id}-workspace.tar.gz"`);
    ctx.set('cache-control', 'no-store');
    try {
      await sendArchive(ctx, body, job.job_id);
    } finally {
      removeObject();
    }
  });
  documentRoute(router, 'GET', '/v1/agent/jobs/:jobId/workspace/archive', { produces: 'application/octet-stream', statuses: [413, 503], summary: "Downloads a job's workspace archive." });
  return router;
}

/**
 * Streams the archive itself rather than through Koa's response, so the end of a download is
 * ours to report: a completed download logs nothing, one the client abandoned logs one line at
 * info, and a store that fails mid-stream one warning (Koa would report both as an unhandled
 * `ERR_STREAM_PREMATURE_CLOSE` with a stack). Headers are already set on `ctx`.
 */
async function sendArchive(ctx: ParameterizedContext<AgentState>, body: Readable, jobId: string): Promise<void> {
  ctx.respond = false;
  const res = ctx.res;
  try {
    await pipeline(body, res);
  } catch (err) {
    const clientGone = res.destroyed && !res.writableFinished && (err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE';
    if (clientGone) {
      ctx.state.log.info({ event: 'workspace_archive_download_aborted', job_id: jobId }, 'workspace archive download aborted by the client');
    } else {
      ctx.state.log.warn({ event: 'workspace_archive_stream_failed', job_id: jobId, err }, 'workspace archive stream failed');
      res.destroy();
    }
  }
}

/**
 * Sandbox states in which the workspace cannot be read, with how the refusal describes them:
 * archive preparation owns the container (its spool is being captured and uploaded, and the
 * container is removed once the archive is verified), and a cold or restoring group has none.
 */
const DOWNLOAD_BLOCKING_STATES: Readonly<Record<string, string>> = {
  archiving: 'being archived', cold: 'archived', restoring: 'being restored',
};

/** Where the chat's retained container lives; 409 while there is none to archive or an archive owns it. */
async function sandboxOf(deps: ApiDeps, groupId: string | null, jobHostId: string | null): Promise<{ hostId: string; containerName: string }> {
  if (!groupId || !jobHostId) throw new AppError('conflict', 'This chat has no sandbox yet: its workspace exists once its first turn has started');
  const row = await deps.db('agent_sandboxes').where({ group_id: groupId }).first<SandboxRow | undefined>(['host_id', 'container_name', 'state']);
  const blocked = row ? DOWNLOAD_BLOCKING_STATES[row.state] : undefined;
  if (blocked) {
    throw new AppError('conflict', `This chat's sandbox is ${blocked} (state ${row!.state}); its workspace cannot be downloaded now`);
  }
  return { hostId: row?.host_id ?? jobHostId, containerName: row?.container_name ?? sandboxContainerName(groupId) };
}

async function runArchiveWorkflow(deps: ApiDeps, input: WorkspaceArchiveInput, requestId: string): Promise<WorkspaceArchiveResult> {
  try {
    return await deps.temporal.workflow.execute<typeof workspaceArchive>(WORKSPACE_ARCHIVE_WORKFLOW_TYPE, {
      taskQueue: deps.settings.TEMPORAL_CONTROL_TASK_QUEUE,
      workflowId: workspaceArchiveWorkflowId(input.jobId, requestId),
      args: [input],
      workflowExecutionTimeout: '35 minutes',
    });
  } catch (err) {
    const type = failureType(err);
    if (type === FailureType.sandboxMissing) throw new AppError('conflict', "This chat's sandbox container no longer exists on its host", { cause: err });
    throw new AppError('service_unavailable', 'The workspace archive could not be built; try again later', { cause: err });
  }
}

/** The `ApplicationFailure` type behind a failed workflow (through its activity failure). */
function failureType(err: unknown): string | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  let cause: unknown = err.cause;
  while (cause instanceof ActivityFailure) cause = cause.cause;
  return cause instanceof ApplicationFailure ? cause.type ?? undefined : undefined;
}
