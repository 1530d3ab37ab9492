/**
 * `grant:<grantId>`: keeps one turn's inference grant alive while its member residency
 * heartbeats (a grant is renewed only while that host and member generation heartbeat). Every
 * `renewEverySeconds` it asks the control activities to renew the grant if the residency is alive
 * (they revoke it otherwise). Ends with `released` on the `release` signal (revoking first) or
 * `residency_lost` once the grant is revoked. The token never passes through here: the host runner
 * fetches it from the API.
 */
import {
  ActivityFailure, condition, continueAsNew, log, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { GrantActivities } from '../activities/grants/grant-activities';
import { releaseGrantSignal, type GrantWorkflowInput, type GrantWorkflowResult } from './definitions/grant';
import { searchAttributes } from './definitions/search-attributes';

const { renewGrantIfResidencyAlive, revokeGrant } = proxyActivities<GrantActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5, initialInterval: '1 second', maximumInterval: '10 seconds' },
});

export async function grantWorkflow(input: GrantWorkflowInput): Promise<GrantWorkflowResult> {
  let released = false;
  setHandler(releaseGrantSignal, () => {
    released = true;
  });
  upsertSearchAttributes([
    { key: searchAttributes.host, value: input.hostId },
    { key: searchAttributes.state, value: 'renewing' },
  ]);
  const residency = { grantId: input.grantId, attemptId: input.attemptId, hostId: input.hostId, groupId: input.groupId, generation: input.generation };
  for (;;) {
    await condition(() => released, input.renewEverySeconds * 1000);
    if (released) {
      await revokeGrant({ grantId: input.grantId });
      upsertSearchAttributes([{ key: searchAttributes.state, value: 'released' }]);
      return 'released';
    }
    try {
      if ((await renewGrantIfResidencyAlive(residency)) === 'revoked') {
        upsertSearchAttributes([{ key: searchAttributes.state, value: 'residency_lost' }]);
        return 'residency_lost';
      }
    } catch (err) {
      // The gateway or database is unreachable for now: the grant may expire meanwhile; the next
      // round finds it expired (`residency_lost`) or renews it.
      if (!(err instanceof ActivityFailure)) throw err;
      log.warn('grant renewal failed; retrying next round', { grantId: input.grantId, error: err.message });
    }
    if (workflowInfo().continueAsNewSuggested && !released) await continueAsNew<typeof grantWorkflow>(input);
  }
}
