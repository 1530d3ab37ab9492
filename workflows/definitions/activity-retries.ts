/**
 * Retry policies shared by the workflows that carry out operator actions (`sandbox:<groupId>`,
 * `host:<hostId>`): one spelling of each, so the two state machines cannot drift apart.
 */
import type { RetryPolicy } from '@temporalio/common';

/** An operator is waiting for the answer (claims, releases): a few quick tries, then the action fails. */
export const OPERATOR_WAITING_RETRY: RetryPolicy = { initialInterval: '500 milliseconds', maximumInterval: '2 seconds', maximumAttempts: 3 };

/** Recording an outcome must happen: retried until PostgreSQL answers. */
export const UNTIL_RECORDED_RETRY: RetryPolicy = { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' };
