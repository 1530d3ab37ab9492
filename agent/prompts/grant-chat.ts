/**
 * Short model calls made on an owner's behalf with a short-lived, never-renewed inference grant
 * (120 s, revoked after the call), shared by the prompt rewrite (`prompt_rewrite` grants) and
 * generated chat titles (`title` grants): one non-streaming `/v1/chat/completions` call to the
 * gateway with the grant token, and the quiet revocation of the grant afterwards. The token is
 * never logged.
 */
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { GatewayGrantClient } from '../grants/gateway-grant-client';

export interface GrantChatCall {
  gatewayUrl: string;
  /** The grant's `agr_…` token. */
  token: string;
  /** The chat-completions request body. */
  body: Record<string, unknown>;
  /** Aborting ends the call with `timeout()`. */
  signal: AbortSignal;
  /** What the call is for, in error messages: e.g. `the prompt rewrite`. */
  what: string;
  /** The error thrown when the call runs out of time (aborted, or the gateway answered 504). */
  timeout: (cause?: unknown) => AppError;
}

interface ChatReply {
  choices?: Array<{ message?: { content?: unknown } }>;
  error?: { message?: string };
}

/**
 * Calls the gateway with the grant token and returns the first choice's message content (as sent:
 * any JSON value or undefined). 429 passes through as `rate_limited`, 504 or an abort is
 * `call.timeout()`, other failures are `upstream_error` (502).
 */
export async function chatWithGrant(call: GrantChatCall): Promise<unknown> {
  let res: Response;
  let reply: ChatReply;
  try {
    res = await fetch(`${call.gatewayUrl.replace(/\/+$/, '')}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${call.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(call.body),
      signal: call.signal,
    });
    reply = (await res.json().catch(() => ({}))) as ChatReply;
  } catch (err) {
    if (call.signal.aborted) throw call.timeout(err);
    throw new AppError('upstream_error', `The gateway could not be reached for ${call.what}: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) {
    const message = reply.error?.message ?? res.statusText;
    if (res.status === 429) throw new AppError('rate_limited', message);
    if (res.status === 504) throw call.timeout();
    throw new AppError('upstream_error', `The gateway refused ${call.what} (${res.status}): ${message}`);
  }
  return reply.choices?.[0]?.message?.content;
}

/** Revokes a short grant; a failure is logged as `event` (the grant expires on its own soon). */
export async function revokeQuietly(options: { grants: GatewayGrantClient; log: Logger; event: string }, grantId: string): Promise<void> {
  try {
    await options.grants.revoke(grantId);
  } catch (err) {
    options.log.warn({ event: options.event, grant_id: grantId, err: (err as Error).message }, 'short-lived grant could not be revoked; it expires within 120 s');
  }
}
