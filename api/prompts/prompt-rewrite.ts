/**
 * One prompt rewrite (spec 4.4, 5.3, 8): issue a `prompt_rewrite` grant for the owner and the
 * model (operation `prompt-rewrite-<uuid>`, 120 s), call the gateway's `/v1/chat/completions` with
 * it under one deadline (default 90 s; 504 when passed), read the reply (2 to 4 questions, or a
 * rewritten prompt), and revoke the grant afterwards whatever happened. Creates no job.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { GatewayGrantClient } from '../../activities/grants/gateway-grant-client';
import { dispatchFailure } from '../grants/host-grant';
import { parseRewriteReply, rewriteChatBody, type RewriteRequest, type RewriteResult } from './rewrite-model';

export interface PromptRewriteOptions {
  grants: GatewayGrantClient;
  gatewayUrl: string;
  deadlineMs: number;
  log: Logger;
}

interface ChatReply {
  choices?: Array<{ message?: { content?: unknown } }>;
  error?: { message?: string };
}

function timeout(deadlineMs: number, cause?: unknown): AppError {
  return new AppError('gateway_timeout', `The prompt rewrite did not finish within ${Math.round(deadlineMs / 1000)} s`, { cause });
}

/** Calls the gateway with the grant token; 429 passes through, other failures are 502. */
async function complete(options: PromptRewriteOptions, token: string, request: RewriteRequest, signal: AbortSignal): Promise<unknown> {
  let res: Response;
  let reply: ChatReply;
  try {
    res = await fetch(`${options.gatewayUrl.replace(/\/+$/, '')}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(rewriteChatBody(request)),
      signal,
    });
    reply = (await res.json().catch(() => ({}))) as ChatReply;
  } catch (err) {
    if (signal.aborted) throw timeout(options.deadlineMs, err);
    throw new AppError('upstream_error', `The gateway could not be reached for the prompt rewrite: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) {
    const message = reply.error?.message ?? res.statusText;
    if (res.status === 429) throw new AppError('rate_limited', message);
    if (res.status === 504) throw timeout(options.deadlineMs);
    throw new AppError('upstream_error', `The gateway refused the prompt rewrite (${res.status}): ${message}`);
  }
  return reply.choices?.[0]?.message?.content;
}

/** Runs one prompt rewrite for `userId`; the grant is revoked before this returns or throws. */
export async function rewritePrompt(options: PromptRewriteOptions, userId: number, request: RewriteRequest): Promise<RewriteResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.deadlineMs);
  let grantId: string | undefined;
  try {
    const operationId = `prompt-rewrite-${randomUUID()}`;
    const grant = await options.grants.issue({ userId, model: request.model, kind: 'prompt_rewrite', operationId }).catch((err: unknown) => {
      throw dispatchFailure(err);
    });
    grantId = grant.grantId;
    if (controller.signal.aborted) throw timeout(options.deadlineMs);
    const content = await complete(options, grant.token, request, controller.signal);
    return parseRewriteReply(request, content);
  } finally {
    clearTimeout(timer);
    if (grantId !== undefined) await revokeQuietly(options, grantId);
  }
}

/** Revokes the rewrite grant; a failure is logged (the grant expires within 120 s anyway). */
async function revokeQuietly(options: PromptRewriteOptions, grantId: string): Promise<void> {
  try {
    await options.grants.revoke(grantId);
  } catch (err) {
    options.log.warn({ event: 'prompt_rewrite_grant_revoke_failed', grant_id: grantId, err: (err as Error).message }, 'prompt-rewrite grant could not be revoked; it expires within 120 s');
  }
}
