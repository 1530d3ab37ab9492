/**
 * Control-queue activities of the sandbox group workflow: thin Temporal adapters over the
 * operator actions' domain (`agent/sandboxes/sandbox-actions.ts`). Each call is one transaction
 * and idempotent (a claim re-run after it committed is refused as "in progress", which the
 * workflow never sends twice; finishing an action already finished is a no-op).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
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
  /** Where `agent_sandbox_delete_verification_failed` goes. */
  log: Logger;
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
      const state = (await releaseSandboxAction(deps.db, input)) ?? null;
      if (state !== null && input.request.action !== 'stop') await logDeleteUnconfirmed(deps, input.groupId, input.request, 'before_removal', input.reason);
      return state;
    },
    /** Records what the host did (stopped, removed) or returns the group to its previous state. */
    async finishSandboxAction(input: FinishInput): Promise<{ state: SandboxState; outcome: 'completed' | 'failed'; reason?: string }> {
      const result = await finishSandboxAction(deps.db, input);
      if (result.outcome === 'failed' && removalUnconfirmed(input)) {
        await logDeleteUnconfirmed(deps, input.groupId, input.request, 'removal', result.reason ?? 'The host did not confirm');
      }
      return result;
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

/**
 * Whether a failed deletion failed because the host did not confirm the removal (it answered
 * "not removed", or the removal itself failed); an archive that failed before any removal was
 * tried (too large, upload, verification of the object) is not a delete that went unconfirmed.
 */
function removalUnconfirmed(input: FinishInput): boolean {
  if (input.removal?.removed === false) return true;
  return input.error !== undefined && (input.request.action === 'delete' || input.request.action === 'force_delete');
}

/**
 * `agent_sandbox_delete_verification_failed` (WARN): a host could not confirm a sandbox delete,
 * either the exact container stopped or dead before removing it (`before_removal`) or the removal
 * itself (`removal`). The group is back in its previous state; ids and the reason only, no secrets.
 */
async function logDeleteUnconfirmed(
  deps: SandboxGroupActivityDeps, groupId: string, request: SandboxActionRequest, stage: 'before_removal' | 'removal', reason: string,
): Promise<void> {
  const row = await deps.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ host_id: string | null; container_id: string | null } | undefined>('host_id', 'container_id');
  deps.log.warn({
    event: 'agent_sandbox_delete_verification_failed', group_id: groupId, host_id: row?.host_id ?? null,
    container_id: row?.container_id ?? request.containerId ?? null, action: request.action, generation: request.generation, stage, reason,
  }, 'the host could not confirm a sandbox delete; the sandbox keeps its previous state');
}

function storeOf(deps: SandboxGroupActivityDeps): ObjectStore {
  if (!deps.objectStore) throw ApplicationFailure.nonRetryable('The control worker has no object store configured', FailureType.objectStoreMissing);
  return deps.objectStore;
}

export type SandboxGroupActivities = ReturnType<typeof createSandboxGroupActivities>;
