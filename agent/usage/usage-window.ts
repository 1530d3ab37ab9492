/**
 * The owners' usage page windows (7 or 30 UTC days; docs/agent-api.md
 * "Usage"): query `days=7|30`, default 7; any other value (a repeated parameter included) is a 400
 * naming `days`. A window of N days is today (UTC, by the database clock) and the N-1 days before.
 */
import { AppError } from '../../lib/errors';

export const USAGE_WINDOWS = [7, 30] as const;
export type UsageWindow = (typeof USAGE_WINDOWS)[number];
export const DEFAULT_USAGE_WINDOW: UsageWindow = 7;

/** The window a `days` query value asks for. */
export function parseUsageDays(raw: unknown): UsageWindow {
  if (raw === undefined) return DEFAULT_USAGE_WINDOW;
  const found = USAGE_WINDOWS.find((d) => raw === String(d));
  if (found === undefined) throw new AppError('invalid_request', `Invalid query parameter 'days': use ${USAGE_WINDOWS.join(' or ')}`, { param: 'days' });
  return found;
}
