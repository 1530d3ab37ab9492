/**
 * `ApplicationFailure` types that cross the line between activities, workflows and their callers:
 * activities throw them, workflows list them as non-retryable or owner-facing, the API maps them
 * to answers. One spelling of each, so a renamed type cannot silently stop matching.
 */

export const FailureType = {
  /** The sandbox image is not on the host (build or load it there). */
  imageMissing: 'ImageMissing',
  /** The repository cannot be cloned into a sandbox (unsupported URL or host). */
  unsupportedRepo: 'UnsupportedRepo',
  /** The requested base ref or commit does not exist in the repository. */
  baseRevisionNotFound: 'BaseRevisionNotFound',
  /** The repository's checkout is larger than the host settings' repository size limit. */
  repositoryTooLarge: 'RepositoryTooLarge',
  /** The sandbox container is of another generation than the turn expects. */
  sandboxGenerationMismatch: 'SandboxGenerationMismatch',
  /** The sandbox container runs under another runtime than its execution profile needs. */
  sandboxRuntimeMismatch: 'SandboxRuntimeMismatch',
  /** The runtime of the sandbox's execution profile failed on this host (not registered, binary gone). */
  sandboxRuntimeUnavailable: 'SandboxRuntimeUnavailable',
  /** The sandbox container died during the turn (memory cap, process limit, the runtime itself). */
  sandboxDied: 'SandboxDied',
  /** The sandbox container (or its group record) no longer exists. */
  sandboxMissing: 'SandboxMissing',
  /** The sandbox container exists but its disk image on the host is gone (its workspace is lost). */
  sandboxDiskMissing: 'SandboxDiskMissing',
  /** A cold group's archive could not be restored as committed (missing, short or corrupted object). */
  archiveRestoreFailed: 'ArchiveRestoreFailed',
  /** The spooled archive an upload grant names is gone from the host (spool again). */
  archiveSpoolMissing: 'ArchiveSpoolMissing',
  /** The host runner has no object store configured. */
  objectStoreMissing: 'ObjectStoreMissing',
  /** The chat's job row is gone. */
  jobMissing: 'JobMissing',
  /** Every execution slot is taken (retryable: admission waits). */
  noFreeSlot: 'NoFreeSlot',
  /** The agent failed the turn (message written for the owner). */
  turnFailed: 'TurnFailed',
  /** The turn reached its time limit. */
  turnTimeLimit: 'TurnTimeLimit',
  /** The attempt was superseded or fenced off. */
  attemptNotCurrent: 'AttemptNotCurrent',
  /** The host runner is not configured to run turns. */
  turnsNotConfigured: 'TurnsNotConfigured',
  /** The turn's model is no longer available to its owner. */
  modelUnavailable: 'ModelUnavailable',
  /** Inference grants are not configured on this deployment. */
  grantsNotConfigured: 'GrantsNotConfigured',
  /** The turn's inference grant could not be issued. */
  grantUnavailable: 'GrantUnavailable',
  /** The control plane did not answer the host runner. */
  controlPlaneUnavailable: 'ControlPlaneUnavailable',
} as const;

export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** Failures of sandbox preparation that retrying cannot fix (the host activities' permanent errors). */
export const PERMANENT_SANDBOX_FAILURES: readonly FailureType[] = [
  FailureType.imageMissing, FailureType.unsupportedRepo, FailureType.baseRevisionNotFound, FailureType.repositoryTooLarge,
  FailureType.sandboxGenerationMismatch, FailureType.sandboxMissing, FailureType.archiveRestoreFailed,
  FailureType.sandboxRuntimeMismatch, FailureType.sandboxRuntimeUnavailable, FailureType.sandboxDiskMissing,
];
