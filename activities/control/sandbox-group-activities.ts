/**
 * Control-queue activities of the sandbox group workflow: thin Temporal adapters over the
 * operator actions' domain (`agent/sandboxes/sandbox-actions.ts`). Each call is one transaction
 * and idempotent (a claim re-run after it committed is refused as "in progress", which the
 * workflow never sends twice; finishing an action already finished is a no-op).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../lib/db';
import type { ObjectStore } from '../../lib/object-store';
import type { Settings } from '../../lib/settings';
import {
  claimSandboxAction, finishSandboxAction, releaseSandboxAction, type Claim, type FinishInput,
} from '../../agent/sandboxes/sandbox-actions';
import { commitArchiveReceipt, grantArchiveUpload, type ArchiveCommit, type ArchiveGrant } from '../../agent/sandboxes/sandbox-archives';
import { FailureType } from '../../workflows/definitions/failures';
import type { SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';

export interface SandboxGroupActivityDeps {
  db: Db;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS'>;
  /** Where sandbox archives go; without one, archive actions are refused. */
  objectStore?: ObjectStore;
}

interface ArchiveInput {
  groupId: string;
  generation: number;
  length: number;
  sha256: string;
}

export function createSandboxGroupActivities(deps: SandboxGroupActivityDeps) {
  return {
    /** Checks an action's condition in PostgreSQL and claims it (pending state) or applies it (inventory). */
    async claimSandboxAction(input: { groupId: string; request: SandboxActionRequest }): Promise<Claim> {
      return claimSandboxAction(deps.db, { ...input, staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, archivesConfigured: deps.objectStore !== undefined });
    },
    /** The host did not confirm before acceptance: back to the previous state, outcome refused. */
    async releaseSandboxAction(input: { groupId: string; request: SandboxActionRequest; reason: string }): Promise<SandboxState | null> {
      return (await releaseSandboxAction(deps.db, input)) ?? null;
    },
    /** Records what the host did (stopped, removed) or returns the group to its previous state. */
    async finishSandboxAction(input: FinishInput): Promise<{ state: SandboxState; outcome: 'completed' | 'failed'; reason?: string }> {
      return finishSandboxAction(deps.db, input);
    },
    /** A presigned single PUT (or the fs equivalent) for exactly the spooled archive. */
    async grantSandboxArchiveUpload(input: ArchiveInput): Promise<ArchiveGrant> {
      return grantArchiveUpload(storeOf(deps), input);
    },
    /** Verifies the uploaded archive's length and SHA-256 and commits its receipt (only then may the container go). */
    async commitSandboxArchive(input: ArchiveInput): Promise<ArchiveCommit> {
      return commitArchiveReceipt(deps.db, storeOf(deps), input);
    },
  };
}

function storeOf(deps: SandboxGroupActivityDeps): ObjectStore {
  if (!deps.objectStore) throw ApplicationFailure.nonRetryable('The control worker has no object store configured', FailureType.objectStoreMissing);
  return deps.objectStore;
}

export type SandboxGroupActivities = ReturnType<typeof createSandboxGroupActivities>;
