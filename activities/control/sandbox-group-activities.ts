/**
 * Control-queue activities of the sandbox group workflow: thin Temporal adapters over the
 * operator actions' domain (`agent/sandboxes/sandbox-actions.ts`). Each call is one transaction
 * and idempotent (a claim re-run after it committed is refused as "in progress", which the
 * workflow never sends twice; finishing an action already finished is a no-op).
 */
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import {
  claimSandboxAction, finishSandboxAction, releaseSandboxAction, type Claim, type FinishInput,
} from '../../agent/sandboxes/sandbox-actions';
import type { SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';

export interface SandboxGroupActivityDeps {
  db: Db;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS'>;
}

export function createSandboxGroupActivities(deps: SandboxGroupActivityDeps) {
  return {
    /** Checks an action's condition in PostgreSQL and claims it (pending state) or applies it (inventory). */
    async claimSandboxAction(input: { groupId: string; request: SandboxActionRequest }): Promise<Claim> {
      return claimSandboxAction(deps.db, { ...input, staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS });
    },
    /** The host did not confirm before acceptance: back to the previous state, outcome refused. */
    async releaseSandboxAction(input: { groupId: string; request: SandboxActionRequest; reason: string }): Promise<SandboxState | null> {
      return (await releaseSandboxAction(deps.db, input)) ?? null;
    },
    /** Records what the host did (stopped, removed) or returns the group to its previous state. */
    async finishSandboxAction(input: FinishInput): Promise<{ state: SandboxState; outcome: 'completed' | 'failed'; reason?: string }> {
      return finishSandboxAction(deps.db, input);
    },
  };
}

export type SandboxGroupActivities = ReturnType<typeof createSandboxGroupActivities>;
