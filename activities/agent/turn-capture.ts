/**
 * The capture of one turn on the host (docs/publisher.md "Capture", "Upload"): when the attempt's
 * context asks for it (a chat with a repository), the workspace is snapshotted before the driver
 * starts and diffed after it finished, and the result is uploaded over the host API, fenced to the
 * attempt. A capture that fails is uploaded as `failed` with its reason (the owner is told); an
 * upload the API does not answer is retried briefly, then logged: the turn itself still completes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { RequestOf } from '../../lib/contracts/endpoint';
import type * as hostApi from '../../lib/contracts/host-api';
import type { AttemptContext } from '../../agent/jobs/attempt-context';
import { captureTurnDiff, snapshotWorkspace, type TurnCapture } from '../docker/workspace-capture';
import { AttemptNotCurrentError, type HostApiClient } from './host-api-client';

/** Upload tries before giving up on a turn's patch. */
const UPLOAD_TRIES = 3;

export interface TurnCaptureDeps {
  docker: Docker;
  api: HostApiClient;
  /** Where failures to upload are reported (the activity's logger). */
  log: { warn(message: string, meta: Record<string, unknown>): void };
}

/** A capture in progress: `finish` diffs and uploads. */
export interface TurnCaptureRun {
  finish(): Promise<void>;
}

/** The upload body of a capture's result. */
export function uploadOf(capture: TurnCapture): RequestOf<typeof hostApi.attemptPatch> {
  switch (capture.status) {
    case 'captured':
      return { status: 'captured', start_tree: capture.startTree, end_tree: capture.endTree, bytes: capture.patch.length, patch_base64: capture.patch.toString('base64') };
    case 'too_large':
      return { status: 'too_large', start_tree: capture.startTree, end_tree: capture.endTree, bytes: capture.bytes };
    default:
      return { status: 'failed', error: capture.reason.slice(0, 1000) };
  }
}

async function upload(deps: TurnCaptureDeps, attemptId: string, body: RequestOf<typeof hostApi.attemptPatch>): Promise<void> {
  for (let tries = 1; ; tries += 1) {
    try {
      await deps.api.uploadPatch(attemptId, body);
      return;
    } catch (err) {
      if (err instanceof AttemptNotCurrentError) throw err;
      if (tries >= UPLOAD_TRIES) {
        deps.log.warn('turn patch upload failed', { event: 'agent_patch_upload_failed', attempt_id: attemptId, status: body.status, detail: (err as Error).message });
        return;
      }
      await sleep(1000 * tries);
    }
  }
}

/**
 * Starts the capture of the attempt's turn (undefined when its chat has no repository): the
 * start snapshot is taken now, before the driver runs.
 */
export async function startTurnCapture(deps: TurnCaptureDeps, context: AttemptContext): Promise<TurnCaptureRun | undefined> {
  const capture = context.capture;
  if (!capture) return undefined;
  const target = { docker: deps.docker, containerName: context.container_name, uid: context.uid };
  const start = await snapshotWorkspace(target, { fresh: true }).catch((err: unknown) => ({ reason: `The workspace could not be snapshotted: ${(err as Error).message}` }));
  return {
    finish: async () => {
      const result: TurnCapture = 'reason' in start
        ? { status: 'failed', reason: start.reason }
        : await captureTurnDiff(target, { startTree: start.tree, maxBytes: capture.max_bytes })
          .catch((err: unknown): TurnCapture => ({ status: 'failed', reason: `The turn's diff could not be made: ${(err as Error).message}` }));
      await upload(deps, context.attempt_id, uploadOf(result));
    },
  };
}
