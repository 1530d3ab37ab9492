/**
 * Generated chat titles (docs/agent-api.md "Titles"), a control-queue activity run by the
 * `title:<jobId>` workflow: for a chat whose title is still prompt-derived, issue the owner a
 * `title` grant (operation `title-<job_id>`, 120 s, never renewed: issued once per chat, so a
 * chat's title is generated at most once), ask the job's model through the gateway up to five
 * times within 120 s (10 s per call), revoke the grant, and store the sanitized title with
 * `title_source = 'generated'` unless the owner renamed the chat meanwhile. When every call fails
 * it logs `agent_title_generation_failed` (no prompt text, no token) and keeps the initial title.
 */
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { appendEvents } from '../../agent/events/event-store';
import { titleChatBody } from '../../agent/jobs/generated-titles';
import { revokeQuietly } from '../../agent/prompts/grant-chat';
import { GrantDispatchError, type GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import type { TitleOutcome } from '../../workflows/definitions/title';
import { askForTitle, failureCode, TITLE_LIMITS, type TitleLimits } from './title-calls';

export { TITLE_LIMITS, type TitleLimits };

export interface TitleActivityDeps {
  db: Db;
  grants: GatewayGrantClient;
  settings: Pick<Settings, 'AGENT_GATEWAY_URL'>;
  log: Logger;
  limits?: Partial<TitleLimits>;
}

interface TitleJob {
  owner_id: string;
  model: string;
  title_source: string;
  prompt: string;
}

export function createTitleActivities(deps: TitleActivityDeps) {
  const { db, grants, log } = deps;
  const limits: TitleLimits = { ...TITLE_LIMITS, ...deps.limits };

  async function loadJob(jobId: string): Promise<TitleJob | undefined> {
    return db('agent_jobs as j')
      .join('agent_turns as t', 't.job_id', 'j.job_id')
      .where({ 'j.job_id': jobId, 't.seq': 1 })
      .whereNull('j.deleted_at')
      .first<TitleJob | undefined>('j.owner_id', 'j.model', 'j.title_source', 't.prompt');
  }

  /** Up to `limits.calls` calls within the window; the first usable title, or the last failure's code. */
  function askModel(token: string, job: TitleJob, startedAt: number): Promise<{ title?: string; calls: number; reason: string }> {
    return askForTitle({ gatewayUrl: deps.settings.AGENT_GATEWAY_URL, token, body: titleChatBody(job.model, job.prompt), limits, startedAt });
  }

  /** Stores the title unless the owner renamed the chat meanwhile; emits `title_changed`. */
  async function store(jobId: string, title: string): Promise<boolean> {
    return db.transaction(async (trx) => {
      const updated = await trx('agent_jobs').where({ job_id: jobId, title_source: 'prompt' }).whereNull('deleted_at')
        .update({ title, title_source: 'generated', updated_at: trx.fn.now() });
      if (updated === 0) return false;
      await appendEvents(trx, jobId, [{
        turnSeq: 1, attemptId: null, seq: 0, eventType: 'title_changed', payload: { title, title_source: 'generated' },
        dedupeKey: `control:${jobId}:title_changed`,
      }]);
      return true;
    });
  }

  return {
    /** Generates the title of chat `jobId` once; never throws for model or grant failures. */
    async generateChatTitle(input: { jobId: string }): Promise<TitleOutcome> {
      const { jobId } = input;
      const job = await loadJob(jobId);
      if (!job) return { kind: 'skipped', reason: 'job_missing' };
      if (job.title_source !== 'prompt') return { kind: 'skipped', reason: 'not_prompt_title' };
      const startedAt = Date.now();
      let grantId: string | undefined;
      let answer: { title?: string; calls: number; reason: string };
      try {
        const grant = await grants.issue({ userId: Number(job.owner_id), model: job.model, kind: 'title', jobId, operationId: `title-${jobId}` });
        grantId = grant.grantId;
        answer = await askModel(grant.token, job, startedAt);
      } catch (err) {
        // 409: this chat's title grant was issued before (a generation already ran).
        if (err instanceof GrantDispatchError && err.status === 409) return { kind: 'skipped', reason: 'already_generated' };
        answer = { calls: 0, reason: failureCode(err) };
      } finally {
        if (grantId !== undefined) await revokeQuietly({ grants, log, event: 'agent_title_grant_revoke_failed' }, grantId);
      }
      if (answer.title === undefined) {
        log.warn({ event: 'agent_title_generation_failed', job_id: jobId, calls: answer.calls, reason: answer.reason }, 'chat title generation failed; the initial title stays');
        return { kind: 'failed', calls: answer.calls, reason: answer.reason };
      }
      if (!(await store(jobId, answer.title))) return { kind: 'skipped', reason: 'renamed' };
      log.info({ event: 'agent_title_generated', job_id: jobId, calls: answer.calls }, 'chat title generated');
      return { kind: 'generated', title: answer.title, calls: answer.calls };
    },
  };
}

export type TitleActivities = ReturnType<typeof createTitleActivities>;
