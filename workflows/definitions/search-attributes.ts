/**
 * Custom search attributes (all Keyword) operators filter on in the Temporal UI; registered on the
 * server by the dev bootstrap and the test environment. `@temporalio/common` is the SDK's pure
 * shared package (the workflow runtime imports it too), so workflows may import this module.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const searchAttributes = {
  owner: defineSearchAttributeKey('AgentOwner', SearchAttributeType.KEYWORD),
  host: defineSearchAttributeKey('AgentHost', SearchAttributeType.KEYWORD),
  state: defineSearchAttributeKey('AgentState', SearchAttributeType.KEYWORD),
  /** A chat's or sandbox group's execution profile (`untrusted-vm-v1`, `trusted-v1`). */
  profile: defineSearchAttributeKey('AgentProfile', SearchAttributeType.KEYWORD),
} as const;
