/**
 * Whole-value environment expansion for the models file (only `base_url`, `api_key`, `api_keys`,
 * `provider_model_id`, `embeddings_path`): a value that is exactly `${NAME}` is replaced by the
 * variable; anything else is kept literally.
 */
const WHOLE_VALUE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

export type Expanded =
  | { ok: true; value: string }
  /** The value named a variable that is unset or blank. */
  | { ok: false; variable: string };

export function expandWhole(value: string, env: Readonly<Record<string, string | undefined>>): Expanded {
  const match = WHOLE_VALUE.exec(value);
  if (!match) return { ok: true, value };
  const variable = match[1]!;
  const resolved = env[variable];
  if (resolved === undefined || resolved.trim() === '') return { ok: false, variable };
  return { ok: true, value: resolved };
}
