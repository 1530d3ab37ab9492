/**
 * Model-name translation on the messages surface only (docs/inference-surfaces.md
 * "Messages surface"): a trailing bracketed long-context marker (`[1m]`, `[200k]`) is removed
 * first, then a dashed version at the end of the name (`family-4-6`, optionally followed by an
 * 8-digit date `-20250101`, which is kept) becomes the dotted gateway id (`family-4.6`). Any other
 * name passes unchanged. No client-side family-selector variable is read.
 */

/** `[1m]`, `[200k]`: a context-size marker a coding client appends to the model name. */
const CONTEXT_MARKER = /\s*\[\d+[km]\]$/i;

/**
 * Name segments that start with a letter, then `-<major>-<minor>` (one or two digits each) at the
 * end, or right before an 8-digit date. Dashes elsewhere (`gpt-4-0613`, `model-2024-01-01`,
 * `llama-3-1-8b`, `family-3-5-name`) are not versions and stay.
 */
const DASHED_VERSION = /^([A-Za-z][A-Za-z0-9_.]*(?:-[A-Za-z][A-Za-z0-9_.]*)*)-(\d{1,2})-(\d{1,2})(-\d{8})?$/;

/** The gateway id to look up for a model name sent to the messages surface. */
export function translateMessagesModel(name: string): string {
  const bare = name.replace(CONTEXT_MARKER, '');
  const match = DASHED_VERSION.exec(bare);
  if (!match) return bare;
  const [, family, major, minor, date] = match;
  return `${family}-${major}.${minor}${date ?? ''}`;
}
