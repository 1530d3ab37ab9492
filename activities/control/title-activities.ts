/**
 * Generated chat titles (spec 8; docs/agent-api.md "Titles"), a control-queue activity run by the
 * `title:<jobId>` workflow: for a chat whose title is still prompt-derived, issue the owner a
 * `title` grant (operation `title-<job_id>`, 120 s, never renewed: issued once per chat, so a
 * chat's title is generated at most once), ask the job's model through the gateway up to five
 * times within 120 s (10 s per call), revoke the grant, and store the sanitized title with
 * `title_source = 'generated'` unless the owner renamed the chat meanwhile. When every call fails
 * it logs `agent_title_generation_failed` (no prompt text, no token) and keeps the initial title.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { appendEvents } from '../../agent/events/event-store';
import { sanitizeGeneratedTitle, titleChatBody } from '../../agent/jobs/generated-titles';
import { chatWithGrant, revokeQuietly } from '../../agent/prompts/grant-chat';
import { GrantDispatchError, type GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import type { TitleOutcome } from '../../workflows/definitions/title';

export interface TitleLimits {
  /** Model calls at most (spec 8: five). */
  calls: number;
  /** All calls end within this long of the start (spec 8: 120 s, the grant's lifetime). */
  windowMs: number;
  /** Deadline of one call (spec 8: 10 s). */
  callTimeoutMs: number;
  /** Pause after the n-th failed call: n times this, within the window. */
  retryDelayMs: number;
}

export const TITLE_LIMITS: TitleLimits = { calls: 5, windowMs: 120_000, callTimeoutMs: 10_000, retryDelayMs: 500 };

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

/** A failure's code for the log: never its message (it may quote the prompt) nor a token. */
function failureCode(err: unknown): string {
  if (err instanceof AppError) return err.code;
  if (err instanceof GrantDispatchError) return err.timedOut ? 'grant_timeout' : `grant_refused_${err.status ?? 'unreachable'}`;
  return 'error';
}

const callTimeout = (ms: number) => (cause?: unknown) => new AppError('gateway_timeout', `The title call did not finish within ${ms} ms`, { cause });

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
  async function askModel(token: string, job: TitleJob, startedAt: number): Promise<{ title?: string; calls: number; reason: string }> {
    let reason = 'no_call';
    let calls = 0;
    while (calls < limits.calls) {
      const remaining = startedAt + limits.windowMs - Date.now();
      if (remaining <= 0) return { calls, reason: `window_elapsed_after_${reason}` };
      const ms = Math.min(limits.callTimeoutMs, remaining);
      calls += 1;
      try {
        const content = await chatWithGrant({
          gatewayUrl: deps.settings.AGENT_GATEWAY_URL, token, body: titleChatBody(job.model, job.prompt),
          signal: AbortSignal.timeout(ms), what: 'the title call', timeout: callTimeout(ms),
        });
        const title = sanitizeGeneratedTitle(content);
        if (title !== undefined) return { title, calls, reason: 'ok' };
        reason = 'unusable_output';
      } catch (err) {
        reason = failureCode(err);
      }
      if (calls < limits.calls) await sleep(Math.max(0, Math.min(limits.retryDelayMs * calls, startedAt + limits.windowMs - Date.now())));
    }
    return { calls, reason };
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
