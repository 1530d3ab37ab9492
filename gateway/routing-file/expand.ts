/**
 * Environment expansion for the routing file (docs/routing-file.md): unlike the models
 * file, every string at any depth (mappings and lists) expands `${VAR}`, `${VAR:-default}` and
 * variables embedded in a longer value. An unset variable without a default expands to the empty
 * string; `:-` also applies when the variable is set but empty (as in a POSIX shell).
 */
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export type Env = Readonly<Record<string, string | undefined>>;

/** Expands every `${…}` reference inside one string. */
export function expandString(value: string, env: Env): string {
  return value.replace(REFERENCE, (_match, name: string, fallback: string | undefined) => {
    const resolved = env[name];
    if (resolved !== undefined && resolved !== '') return resolved;
    return fallback ?? '';
  });
}

/** Expands every string value of a parsed YAML document; keys and non-string scalars are kept. */
export function expandDeep(value: unknown, env: Env): unknown {
  if (typeof value === 'string') return expandString(value, env);
  if (Array.isArray(value)) return value.map((item) => expandDeep(item, env));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expandDeep(item, env)]));
  }
  return value;
}
