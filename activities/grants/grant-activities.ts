/**
 * Activities of the grant workflow (`workflows/grant.ts`): renew a turn's inference grant while
 * its residency is alive, revoke it otherwise or when released (docs/agent-grants.md). A residency
 * is alive while its attempt is `running` on that host, the host heartbeats within
 * `AGENT_HOST_STALE_SECONDS` and is not being removed, and (when a group is named) the group's
 * container is still the same generation. Both activities are idempotent.
 */
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import type { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { residencyAlive, type ResidencyInput } from '../../agent/grants/residency';

export interface GrantActivityDeps {
  db: Db;
  grants: GatewayGrantClient;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'AGENT_GRANT_TTL_SECONDS'>;
}


export type { ResidencyInput };

export type RenewOutcome = 'renewed' | 'revoked' | 'not_issued';

export function createGrantActivities(deps: GrantActivityDeps) {
  const { db, grants, settings } = deps;
  return {
    /**
     * Renews the grant while its residency is alive; otherwise revokes it. `not_issued` while the
     * grant row does not exist yet and the residency is alive (the host fetches its token itself);
     * a residency that is gone before anything was issued is `revoked` too (nothing to renew).
     */
    async renewGrantIfResidencyAlive(input: ResidencyInput): Promise<RenewOutcome> {
      const row = await db('agent_grants').where({ grant_id: input.grantId }).first<{ revoked_at: Date | null } | undefined>('revoked_at');
      if (row?.revoked_at) return 'revoked';
      const alive = await residencyAlive(db, input, settings.AGENT_HOST_STALE_SECONDS);
      if (!alive) {
        if (row) await grants.revoke(input.grantId);
        return 'revoked';
      }
      if (!row) return 'not_issued';
      const renewed = await grants.renew(input.grantId, settings.AGENT_GRANT_TTL_SECONDS);
      return renewed === 'gone' ? 'revoked' : 'renewed';
    },

    /** Revokes a grant at the gateway (idempotent; an unknown grant counts as revoked). */
    async revokeGrant(input: { grantId: string }): Promise<void> {
      await grants.revoke(input.grantId);
    },
  };
}

export type GrantActivities = ReturnType<typeof createGrantActivities>;
