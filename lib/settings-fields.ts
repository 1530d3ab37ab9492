/** Field builders shared by the settings modules (lib/settings.ts): environment strings to typed values. */
import { z } from 'zod';

/** A boolean given as an environment string: true/1/yes/on and false/0/no/off (case-insensitive). */
export const flag = (defaultValue: boolean) => z.stringbool().default(defaultValue);

/** An optional string where an empty value means "unset". */
export const optionalString = () =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.string().optional());

/** An optional URL; an empty value counts as unset. */
export const optionalUrl = () =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.string().url().optional());

export const port = (defaultValue: number) => z.coerce.number().int().min(0).max(65535).default(defaultValue);

/** Parses an environment string as JSON (a zod issue "must be a JSON object" when it is not). */
export function parseJsonText(text: string, ctx: z.RefinementCtx): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
    return z.NEVER;
  }
}
