/**
 * One prompt rewrite (docs/agent-grants.md): issue a `prompt_rewrite` grant for the owner and the
 * model (operation `prompt-rewrite-<uuid>`, 120 s), call the gateway's `/v1/chat/completions` with
 * it under one deadline (default 90 s; 504 when passed), read the reply (2 to 4 questions, or a
 * rewritten prompt), and revoke the grant afterwards whatever happened. Creates no job.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import { PROMPT_REWRITE_OPERATION_PREFIX } from '../../lib/contracts/grant-dispatch';
import type { GatewayGrantClient } from '../grants/gateway-grant-client';
import { dispatchFailure } from '../grants/host-grant';
import { chatWithGrant, revokeQuietly } from './grant-chat';
import { parseRewriteReply, rewriteChatBody, type RewriteRequest, type RewriteResult } from './rewrite-model';

export interface PromptRewriteOptions {
  grants: GatewayGrantClient;
  gatewayUrl: string;
  deadlineMs: number;
  log: Logger;
}

function timeout(deadlineMs: number, cause?: unknown): AppError {
  return new AppError('gateway_timeout', `The prompt rewrite did not finish within ${Math.round(deadlineMs / 1000)} s`, { cause });
}

/** Runs one prompt rewrite for `userId`; the grant is revoked before this returns or throws. */
export async function rewritePrompt(options: PromptRewriteOptions, userId: number, request: RewriteRequest): Promise<RewriteResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.deadlineMs);
  let grantId: string | undefined;
  try {
    const operationId = `${PROMPT_REWRITE_OPERATION_PREFIX}${randomUUID()}`;
    const grant = await options.grants.issue({ userId, model: request.model, kind: 'prompt_rewrite', operationId }).catch((err: unknown) => {
      throw dispatchFailure(err, { model: request.model, log: options.log });
    });
    grantId = grant.grantId;
    if (controller.signal.aborted) throw timeout(options.deadlineMs);
    const content = await chatWithGrant({
      gatewayUrl: options.gatewayUrl, token: grant.token, body: rewriteChatBody(request), signal: controller.signal,
      what: 'the prompt rewrite', timeout: (cause) => timeout(options.deadlineMs, cause),
    });
    return parseRewriteReply(request, content);
  } finally {
    clearTimeout(timer);
    if (grantId !== undefined) await revokeQuietly({ grants: options.grants, log: options.log, event: 'prompt_rewrite_grant_revoke_failed' }, grantId);
  }
}
