/**
 * Checks of client parameters shared by the chat and messages wire bodies: token limits clamped
 * to the route's `max_output_length`, `reasoning_effort` checked against the route's list.
 */
import { AppError } from '../../lib/errors';

const NO_EFFORTS: readonly string[] = Object.freeze([]);

/** A token limit clamped to `max`; `null` passes; anything but a finite number is a 400 naming `param`. */
export function clampTokens(param: string, value: unknown, max: number): unknown {
  if (value === null) return value;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new AppError('invalid_request', `Invalid '${param}': expected a number`, { param });
  }
  return value > max ? max : value;
}

/** `value` when the route accepts it as `reasoning_effort`, else a 400 listing the allowed values. */
export function checkedReasoningEffort(value: unknown, reasoningEfforts: readonly string[] | undefined, supported: readonly string[]): unknown {
  const allowed = supported.includes('reasoning_effort') ? (reasoningEfforts ?? NO_EFFORTS) : NO_EFFORTS;
  if (typeof value === 'string' && allowed.includes(value)) return value;
  const choices = allowed.length === 0 ? 'none (this model does not accept reasoning_effort)' : allowed.join(', ');
  throw new AppError('invalid_request', `Invalid 'reasoning_effort': ${JSON.stringify(value)}. Allowed values: ${choices}`, {
    param: 'reasoning_effort',
  });
}
