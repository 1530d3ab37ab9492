/**
 * Control-queue activities of the host workflow (`host:<hostId>`): thin Temporal adapters over the
 * host domain (agent/hosts). Each call is one transaction. Refusals come back as values, never as
 * thrown errors, so the workflow decides what the operator sees; a thrown error means PostgreSQL
 * did not answer (retried).
 */
import type { Db } from '../../lib/db';
import { isAppError } from '../../lib/errors';
import { saveHostSlots } from '../../agent/hosts/host-admin';
import { noteHostActionRefused, noteSlotsApplied, observeHost } from '../../agent/hosts/host-observation';
import { cancelHostRemoval, finishHostRemoval, requestHostRemoval, type RemovalStep } from '../../agent/hosts/host-removal';
import type { HostActionBy, HostObservation } from '../../workflows/definitions/host';

export interface HostWorkflowActivityDeps {
  db: Db;
}

/** A slot change saved, or why not. */
export type SlotsSave = { kind: 'saved'; previous: number | null } | { kind: 'not_found' } | { kind: 'refused'; reason: string };

export function createHostWorkflowActivities(deps: HostWorkflowActivityDeps) {
  return {
    /** The host row as the workflow judges it (heartbeat age by the database clock). */
    async observeHost(input: { hostId: string }): Promise<HostObservation> {
      return observeHost(deps.db, input.hostId);
    },
    /** Saves the operator's slots with its audit row; refused while a removal is pending. */
    async saveHostSlots(input: { hostId: string; slots: number | null; by: HostActionBy }): Promise<SlotsSave> {
      try {
        return { kind: 'saved', previous: (await saveHostSlots(deps.db, input.hostId, input.slots, input.by)).previous };
      } catch (err) {
        if (isAppError(err) && err.code === 'not_found') return { kind: 'not_found' };
        if (isAppError(err) && err.code === 'conflict') {
          await noteHostActionRefused(deps.db, { hostId: input.hostId, action: 'change_slots', by: input.by, reason: err.message });
          return { kind: 'refused', reason: err.message };
        }
        throw err;
      }
    },
    /** Removes the host now, or starts its drain. */
    async requestHostRemoval(input: { hostId: string; by: HostActionBy }): Promise<RemovalStep> {
      return requestHostRemoval(deps.db, input.hostId, input.by);
    },
    /** The drain's check: removes the host once nothing holds it. */
    async finishHostRemoval(input: { hostId: string }): Promise<RemovalStep> {
      return finishHostRemoval(deps.db, input.hostId);
    },
    /** Takes back a pending removal. */
    async cancelHostRemoval(input: { hostId: string; by: HostActionBy }): Promise<RemovalStep> {
      return cancelHostRemoval(deps.db, input.hostId, input.by);
    },
    /** Audits a slot change the runner confirmed. */
    async noteHostSlotsApplied(input: { hostId: string; slots: number | null; reported: number }): Promise<void> {
      await noteSlotsApplied(deps.db, input);
    },
  };
}

export type HostWorkflowActivities = ReturnType<typeof createHostWorkflowActivities>;
