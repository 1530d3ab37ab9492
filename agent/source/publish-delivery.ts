/**
 * Starts the publication of a turn's patch (`publish:<turnId>` on the control task queue;
 * docs/publisher.md "Publish"). PostgreSQL holds the pending patch first; the start is only a
 * notification: a start that fails is logged and the reconciler starts the workflow later, and a
 * start while one runs joins it (the id is the turn's), so a crash never loses a publication and
 * never publishes twice.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import type { publishWorkflow } from '../../workflows/publish';
import { PUBLISH_WORKFLOW_TYPE, publishWorkflowId } from '../../workflows/definitions/publish';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { pendingPublications } from './publications';

export type PublishSettings = Pick<Settings, 'TEMPORAL_CONTROL_TASK_QUEUE' | 'TEMPORAL_CALL_TIMEOUT_SECONDS'>;

export class PublishDelivery {
  constructor(private readonly client: Client, private readonly settings: PublishSettings, private readonly log: Logger) {}

  /** Starts (or joins) the publication of turn `turnId`; true when Temporal accepted it. */
  async start(publication: { turnId: string; jobId: string; ownerId: number }): Promise<boolean> {
    try {
      await this.client.connection.withDeadline(Date.now() + this.settings.TEMPORAL_CALL_TIMEOUT_SECONDS * 1000, () => this.client.workflow.start<typeof publishWorkflow>(PUBLISH_WORKFLOW_TYPE, {
        workflowId: publishWorkflowId(publication.turnId),
        taskQueue: this.settings.TEMPORAL_CONTROL_TASK_QUEUE,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ turnId: publication.turnId }],
        typedSearchAttributes: [{ key: searchAttributes.owner, value: String(publication.ownerId) }],
        memo: { jobId: publication.jobId, turnId: publication.turnId },
      }));
      return true;
    } catch (err) {
      this.log.warn({ event: 'agent_publish_start_deferred', job_id: publication.jobId, turn_id: publication.turnId, err: (err as Error).message }, 'publication pending; the reconciler starts it when Temporal answers');
      return false;
    }
  }
}

/** Starts the publication of every pending patch of a completed turn older than `minAgeSeconds`; returns how many started. */
export async function reconcilePendingPublications(deps: { db: Db; delivery: PublishDelivery; log: Logger; minAgeSeconds: number }): Promise<number> {
  const rows = await pendingPublications(deps.db, deps.minAgeSeconds);
  let started = 0;
  for (const row of rows) {
    if (await deps.delivery.start({ turnId: row.turn_id, jobId: row.job_id, ownerId: Number(row.owner_id) })) started += 1;
  }
  if (rows.length > 0) deps.log.info({ event: 'agent_publications_reconciled', found: rows.length, started }, 'started pending publications');
  return started;
}
