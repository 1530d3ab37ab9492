/**
 * The model calls of a generated title (at most five calls within 120 s, 10 s each;
 * docs/agent-api.md "Titles"), shared by chat titles (title-activities.ts) and pull-request titles
 * (pr-title.ts): one call after another with the grant's token until an answer holds a usable
 * title, pausing a little longer after each failure, never past the window. Returns the title, or
 * the last failure's code (for the log: never the prompt or the token).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../lib/errors';
import { sanitizeGeneratedTitle } from '../../agent/jobs/generated-titles';
import { chatWithGrant } from '../../agent/prompts/grant-chat';
import { GrantDispatchError } from '../../agent/grants/gateway-grant-client';

export interface TitleLimits {
  /** Model calls at most (five by default). */
  calls: number;
  /** All calls end within this long of the start (120 s by default, the grant's lifetime). */
  windowMs: number;
  /** Deadline of one call (10 s by default). */
  callTimeoutMs: number;
  /** Pause after the n-th failed call: n times this, within the window. */
  retryDelayMs: number;
}

export const TITLE_LIMITS: TitleLimits = { calls: 5, windowMs: 120_000, callTimeoutMs: 10_000, retryDelayMs: 500 };

/** A failure's code for the log: never its message (it may quote the prompt) nor a token. */
export function failureCode(err: unknown): string {
  if (err instanceof AppError) return err.code;
  if (err instanceof GrantDispatchError) return err.timedOut ? 'grant_timeout' : `grant_refused_${err.status ?? 'unreachable'}`;
  return 'error';
}

const callTimeout = (ms: number) => (cause?: unknown) => new AppError('gateway_timeout', `The title call did not finish within ${ms} ms`, { cause });

/** Up to `limits.calls` calls within the window from `startedAt`; the first usable title, or the last failure's code. */
export async function askForTitle(input: { gatewayUrl: string; token: string; body: Record<string, unknown>; limits: TitleLimits; startedAt: number }): Promise<{ title?: string; calls: number; reason: string }> {
  const { limits, startedAt } = input;
  let reason = 'no_call';
  let calls = 0;
  while (calls < limits.calls) {
    const remaining = startedAt + limits.windowMs - Date.now();
    if (remaining <= 0) return { calls, reason: `window_elapsed_after_${reason}` };
    const ms = Math.min(limits.callTimeoutMs, remaining);
    calls += 1;
    try {
      const content = await chatWithGrant({
        gatewayUrl: input.gatewayUrl, token: input.token, body: input.body, signal: AbortSignal.timeout(ms), what: 'the title call', timeout: callTimeout(ms),
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
