/**
 * Pull-request titles (docs/publisher.md "Title"): generated once per chat, when its draft pull
 * request is opened, through the title machinery (title-calls.ts) within the task-title limits:
 * a `title` grant with operation `pr-title-<job_id>` (120 s, never renewed, used once, revoked
 * afterwards), at most 4,000 characters of input (the names of the files the turn changed, then
 * the chat's first prompt), 256 output tokens, up to five calls of 10 s within 120 s. The caller
 * logs `agent_pr_title_generation_failed` with the reason code returned here and uses the prompt title.
 */
import type { Logger } from '../../lib/logger';
import { PR_TITLE_OPERATION_PREFIX } from '../../lib/contracts/grant-dispatch';
import { TITLE_INPUT_MAX_CHARS, TITLE_MAX_TOKENS } from '../../agent/jobs/generated-titles';
import { cutToChars } from '../../agent/jobs/titles';
import { revokeQuietly } from '../../agent/prompts/grant-chat';
import type { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import type { PrTitleGenerator } from './publish-activities';
import { askForTitle, failureCode, TITLE_LIMITS, type TitleLimits } from './title-calls';

/** The system prompt of a pull-request title call; tests tell these calls apart by it. */
export const PR_TITLE_SYSTEM_PROMPT = [
  'You name pull requests opened by an autonomous coding agent.',
  'Read the user\'s request and the files the agent changed, and reply with a short, specific pull request title (at most 72 characters)',
  'in the language of the request, in the imperative mood. Reply with the title only: no quotes, no markdown, no trailing period, no explanation.',
].join(' ');

/** Names of the files a patch changes (its `diff --git` lines), at most `max`. */
function changedFiles(patch: Buffer, max = 50): string[] {
  const names = [...patch.toString('utf8').matchAll(/^diff --git a\/(.+?) b\//gm)].map((m) => m[1] ?? '');
  return names.length > max ? [...names.slice(0, max), `… and ${names.length - max} more`] : names;
}

/** The chat-completions body of a pull-request title call. */
export function prTitleChatBody(model: string, prompt: string, patch: Buffer): Record<string, unknown> {
  const files = changedFiles(patch);
  // The files first: a long prompt is what the 4,000-character cut shortens.
  const input = `Changed files:\n${files.join('\n')}\n\nRequest:\n${prompt}`;
  return {
    model,
    messages: [{ role: 'system', content: PR_TITLE_SYSTEM_PROMPT }, { role: 'user', content: cutToChars(input, TITLE_INPUT_MAX_CHARS) }],
    max_tokens: TITLE_MAX_TOKENS,
    stream: false,
  };
}

/** A {@link PrTitleGenerator} over the gateway with the owner's short `title` grant. */
export function createPrTitleGenerator(deps: { grants: GatewayGrantClient; gatewayUrl: () => string; log: Logger; limits?: Partial<TitleLimits> }): PrTitleGenerator {
  const limits: TitleLimits = { ...TITLE_LIMITS, ...deps.limits };
  return async (input) => {
    const startedAt = Date.now();
    let grantId: string | undefined;
    try {
      const grant = await deps.grants.issue({ userId: input.ownerId, model: input.model, kind: 'title', jobId: input.jobId, operationId: `${PR_TITLE_OPERATION_PREFIX}${input.jobId}` });
      grantId = grant.grantId;
      const answer = await askForTitle({ gatewayUrl: deps.gatewayUrl(), token: grant.token, body: prTitleChatBody(input.model, input.prompt, input.patch), limits, startedAt });
      return answer.title !== undefined ? { title: answer.title } : { reason: `${answer.reason}_after_${answer.calls}_calls` };
    } catch (err) {
      return { reason: failureCode(err) };
    } finally {
      if (grantId !== undefined) await revokeQuietly({ grants: deps.grants, log: deps.log, event: 'agent_pr_title_grant_revoke_failed' }, grantId);
    }
  };
}
