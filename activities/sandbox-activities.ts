/**
 * Host activities of retained sandboxes (task queue `host:<hostId>`): preparing a chat's group
 * container and workspace, and archiving a workspace for download. Permanent problems become
 * non-retryable `ApplicationFailure`s named by type; everything else is retried by Temporal.
 * The repository clone credential is looked up here on the host, never passed through Temporal.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { relayHostDir, sandboxContainerName } from '../agent/sandboxes/names';
import { FsObjectStore, type ObjectStore, type UploadGrant, type UploadOutcome } from '../lib/object-store';
import { FailureType } from '../workflows/definitions/failures';
import { keyedSerializer } from '../lib/keyed-serializer';
import { DEFAULT_SANDBOX_LIMITS, ImageMissingError, type SandboxLimits } from './docker/sandbox-command';
import {
  ensureSandboxContainer, fitLimitsToHost, SandboxGenerationMismatchError, SandboxMissingError, SandboxRuntimeMismatchError, SandboxRuntimeUnavailableError,
} from './docker/sandbox-container';
import { DEFAULT_RUNTIMES, dockerRuntimeFor, type SandboxRuntimes } from './docker/container-runtime';
import type { ExecutionProfile } from '../lib/execution-profiles';
import { removeContainerAndDisk } from './docker/sandbox-removal';
import { SandboxDiskMissingError } from './docker/sandbox-disk';
import { observeSandboxContainer, removeExactStoppedContainer, stopExactContainer, type ExactContainer } from './docker/sandbox-lifecycle';
import { archiveWorkspace, type WorkspaceArchiveRequest } from './docker/workspace-archive';
import { ArchiveRestoreError, ArchiveSpoolMissingError, DEFAULT_MEMORY_SPOOL_BYTES, discardSpool, restoreArchive, spoolArchive, uploadSpool } from './docker/sandbox-archive';
import type { ContainerObservation, ContainerRemoval, SandboxArchiveReceipt, SpooledArchive } from '../workflows/definitions/sandbox-group';
import type { WorkspaceArchiveResult } from '../workflows/definitions/workspace-archive';
import { BaseRevisionNotFoundError, RepositoryTooLargeError, UnsupportedRepoError } from './docker/workspace-clone';
import { initWorkspace } from './docker/workspace-init';

export interface SandboxActivityDeps {
  docker: Docker;
  hostId: string;
  image: string;
  limits?: SandboxLimits;
  /** Object store the workspace archives go to. */
  objectStore?: ObjectStore;
  /**
   * The read-only clone credential of the attempt's repository, if one is needed: the host runner
   * asks the control-plane API for it (fenced to the attempt leased to this host; docs/forges.md).
   */
  cloneCredential?: (input: { attemptId: string; repo: string }) => Promise<string | undefined>;
  /** Extra labels on created containers (tests mark theirs). */
  sandboxLabels?: Record<string, string>;
  /** Where archives are spooled before upload and after download (default `<tmpdir>/agent-archive-spool`). */
  archiveSpoolDir?: string;
  /** Largest archive spool held in memory instead of a file (default `DEFAULT_MEMORY_SPOOL_BYTES`; 0: always a file). */
  archiveMemorySpoolBytes?: number;
  /** Root of the containers' model-relay directories on this host (`AGENT_RELAY_DIR`); absent: no relay mount. */
  relayRoot?: string;
  /** Where this host keeps the sandboxes' disks (`AGENT_SANDBOX_DISK_DIR`, absolute; activities/docker/sandbox-disk.ts). */
  sandboxDiskDir: string;
  /** The Docker runtimes of the execution profiles on this host (default: runsc and runc, backend `vm`). */
  runtimes?: SandboxRuntimes;
  /** Told when a runtime failed to create or start a container (the runner re-runs its preflight). */
  onRuntimeFailure?: (runtime: string) => void;
}

export interface PrepareSandboxInput {
  jobId: string;
  groupId: string;
  generation: number;
  attemptId: string;
  uid: number;
  repo: string | null;
  baseRef?: string;
  baseSha?: string;
  /** A cold group: restore this committed archive into the new generation's container first. */
  restore?: SandboxArchiveReceipt;
  /** Caps of a container this call creates (the turn's host settings); absent: this host runner's own. */
  limits?: SandboxLimits;
  /** Largest checkout cloned into a new workspace, bytes (the turn's host settings); absent: no limit. */
  repositoryMaxBytes?: number;
  /** The group's execution profile (absent in work from before profiles: the safe `untrusted-vm-v1`). */
  executionProfile?: ExecutionProfile;
}

export interface PrepareSandboxResult {
  containerId: string;
  containerName: string;
  baseSha: string;
}

/** Error classes that retrying cannot fix, by the failure type they become. */
const PERMANENT: ReadonlyArray<[new (...args: never[]) => Error, FailureType]> = [
  [ImageMissingError, FailureType.imageMissing],
  [UnsupportedRepoError, FailureType.unsupportedRepo],
  [BaseRevisionNotFoundError, FailureType.baseRevisionNotFound],
  [RepositoryTooLargeError, FailureType.repositoryTooLarge],
  [SandboxGenerationMismatchError, FailureType.sandboxGenerationMismatch],
  [SandboxMissingError, FailureType.sandboxMissing],
  [SandboxRuntimeMismatchError, FailureType.sandboxRuntimeMismatch],
  [SandboxRuntimeUnavailableError, FailureType.sandboxRuntimeUnavailable],
  [SandboxDiskMissingError, FailureType.sandboxDiskMissing],
  [ArchiveRestoreError, FailureType.archiveRestoreFailed],
];

/** Failure types of the permanent errors (the workflows' `PERMANENT_SANDBOX_FAILURES` must list each). */
export const SANDBOX_ERROR_FAILURE_TYPES: readonly FailureType[] = PERMANENT.map(([, type]) => type);

function asActivityError(err: unknown): unknown {
  for (const [cls, type] of PERMANENT) {
    if (err instanceof cls) return ApplicationFailure.nonRetryable(err.message, type);
  }
  return err;
}

/** Runs `work` while heartbeating every few seconds. */
async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const ticker = setInterval(() => ctx.heartbeat(), 5000);
  try {
    return await work();
  } catch (err) {
    throw asActivityError(err);
  } finally {
    clearInterval(ticker);
  }
}

/** A group's model-relay directory on this host (created here: Docker would create a missing bind source as root's). */
function relayDirFor(root: string, groupId: string): string {
  const dir = relayHostDir(root, sandboxContainerName(groupId));
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  return dir;
}

export function createSandboxActivities(deps: SandboxActivityDeps) {
  const perGroup = keyedSerializer();
  const spoolDir = deps.archiveSpoolDir ?? join(tmpdir(), 'agent-archive-spool');
  let hostCpus: Promise<number> | undefined;
  /** The caps a container created now gets: the turn's, else this runner's, as this host can apply them. */
  const limitsFor = async (input: PrepareSandboxInput): Promise<SandboxLimits> => {
    hostCpus ??= (deps.docker.info() as Promise<{ NCPU: number }>).then((info) => info.NCPU).catch((err: unknown) => {
      hostCpus = undefined;
      throw err;
    });
    return fitLimitsToHost(input.limits ?? deps.limits ?? DEFAULT_SANDBOX_LIMITS, await hostCpus);
  };
  const runtimes = deps.runtimes ?? DEFAULT_RUNTIMES;
  return {
    /** Creates or reuses the group's container, adds the member and initializes `/workspace` once. */
    async prepareSandbox(input: PrepareSandboxInput): Promise<PrepareSandboxResult> {
      return heartbeating(() => perGroup(input.groupId, async () => {
        const runtime = dockerRuntimeFor(runtimes, input.executionProfile);
        const ensured = await ensureSandboxContainer(deps.docker, {
          jobId: input.jobId, groupId: input.groupId, generation: input.generation, attemptId: input.attemptId,
          hostId: deps.hostId, uid: input.uid, image: deps.image, limits: await limitsFor(input), runtime, diskRoot: deps.sandboxDiskDir,
          ...(deps.sandboxLabels ? { extraLabels: deps.sandboxLabels } : {}),
          ...(deps.relayRoot ? { relayDir: relayDirFor(deps.relayRoot, input.groupId) } : {}),
        }).catch((err: unknown) => {
          if (err instanceof SandboxRuntimeUnavailableError) deps.onRuntimeFailure?.(runtime.name);
          throw err;
        });
        if (input.restore) await restoreInto(deps, ensured, input.restore, spoolDir);
        const base = input.repo === null
          ? await initWorkspace(deps.docker, ensured.containerName, { uid: input.uid, repo: null })
          : await initWorkspace(deps.docker, ensured.containerName, {
            uid: input.uid, repo: input.repo,
            ...(input.baseRef !== undefined ? { baseRef: input.baseRef } : {}),
            ...(input.baseSha !== undefined ? { baseSha: input.baseSha } : {}),
            ...(input.repositoryMaxBytes !== undefined ? { maxBytes: input.repositoryMaxBytes } : {}),
            ...credentialFor(deps, { attemptId: input.attemptId, repo: input.repo }),
          });
        return { containerId: ensured.containerId, containerName: ensured.containerName, baseSha: base.baseSha };
      }));
    },

    /** How the group's exact container is now (running, stopped, dead, missing, or another incarnation). */
    async observeSandboxContainer(input: ExactContainer): Promise<ContainerObservation> {
      return observeSandboxContainer(deps.docker, input);
    },

    /** Stop idle: stops the exact container, keeping it and its workspace, then observes it. */
    async stopSandboxContainer(input: ExactContainer): Promise<ContainerObservation> {
      return heartbeating(() => perGroup(groupOf(input), () => stopExactContainer(deps.docker, input)));
    },

    /** Delete: removes the exact container only when stopped or dead; never stops one. */
    async removeStoppedSandboxContainer(input: ExactContainer): Promise<ContainerRemoval> {
      return heartbeating(() => perGroup(groupOf(input), () => removeExactStoppedContainer(deps.docker, input, deps.sandboxDiskDir)));
    },

    /**
     * Archive, step 1 (docs/sandboxes.md "Archives"): spools the exact stopped or dead container's archive on this host
     * and answers its length and SHA-256 (for the upload grant); never starts the container.
     */
    async spoolSandboxArchive(input: ExactContainer & { groupId: string }): Promise<SpooledArchive
      | { status: 'not_stopped'; observation: ContainerObservation } | { status: 'too_large'; bytes: number; limit: number }> {
      return heartbeating(() => perGroup(input.groupId, () => spoolArchive(deps.docker, input, spoolDir, undefined, deps.archiveMemorySpoolBytes ?? DEFAULT_MEMORY_SPOOL_BYTES)));
    },

    /** Archive, step 2: uploads the spool with the control plane's grant (`exists`: the store verifies it next). */
    async uploadSandboxArchive(input: { grant: UploadGrant; path: string }): Promise<UploadOutcome> {
      return heartbeating(async () => {
        try {
          return await uploadSpool(input.grant, input.path, deps.objectStore instanceof FsObjectStore ? { fsStore: deps.objectStore } : {});
        } catch (err) {
          if (err instanceof ArchiveSpoolMissingError) throw ApplicationFailure.nonRetryable(err.message, FailureType.archiveSpoolMissing);
          throw err;
        }
      });
    },

    /** Removes a spool file (after its upload, or when the archive is abandoned). */
    async discardSandboxArchiveSpool(input: { path: string }): Promise<void> {
      if (!input.path.startsWith(spoolDir)) throw ApplicationFailure.nonRetryable(`${input.path} is not a spool file of this host`, 'InvalidSpoolPath');
      await discardSpool(input.path);
    },

    /** Archives a sandbox's whole `/workspace` (gzipped tar) into the object store under `key`. */
    async buildWorkspaceArchive(input: WorkspaceArchiveRequest): Promise<WorkspaceArchiveResult> {
      const store = deps.objectStore;
      if (!store) throw ApplicationFailure.nonRetryable('This host runner has no object store configured', FailureType.objectStoreMissing);
      return heartbeating(() => archiveWorkspace(deps.docker, store, input));
    },
  };
}

/**
 * Restores a cold group's archive into the container just ensured for its new generation. A
 * failed check removes that container and its disk (they hold nothing yet) so the next restore
 * starts clean.
 */
async function restoreInto(
  deps: SandboxActivityDeps, ensured: { containerId: string; containerName: string }, receipt: SandboxArchiveReceipt, spoolDir: string,
): Promise<void> {
  if (!deps.objectStore) throw ApplicationFailure.nonRetryable('This host runner has no object store configured to restore from', FailureType.objectStoreMissing);
  try {
    await restoreArchive(deps.docker, deps.objectStore, ensured.containerName, receipt, spoolDir);
  } catch (err) {
    if (err instanceof ArchiveRestoreError) {
      await removeContainerAndDisk(deps.docker, { Id: ensured.containerId, Name: ensured.containerName }, { force: true, diskRoot: deps.sandboxDiskDir })
        .catch(() => undefined);
    }
    throw err;
  }
}

/** The group of a container name `sbx-<groupId>` (the serializer key `prepareSandbox` uses). */
function groupOf(input: ExactContainer): string {
  return input.containerName.replace(/^sbx-/, '');
}

/** The clone credential's lookup, run only when the workspace is cloned (never for a reused one). */
function credentialFor(deps: SandboxActivityDeps, input: { attemptId: string; repo: string }): { lookUpCredential?: () => Promise<string | undefined> } {
  const lookUp = deps.cloneCredential;
  return lookUp ? { lookUpCredential: () => lookUp(input) } : {};
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
