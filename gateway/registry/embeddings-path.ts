/**
 * Validation of a route's `embeddings_path` (docs/registry.md). Returns the path to join, `undefined`
 * for the default, or the unresolved variable; invalid values throw a startup error.
 */
import { RegistryConfigError } from './errors';
import { expandWhole } from './expand';

export type EmbeddingsPath = { ok: true; path: string | undefined } | { ok: false; variable: string };

export function validateEmbeddingsPath(raw: unknown, env: Readonly<Record<string, string | undefined>>, where: string): EmbeddingsPath {
  if (raw === null || raw === undefined) return { ok: true, path: undefined };
  if (typeof raw !== 'string') {
    throw new RegistryConfigError(`${where}: embeddings_path must be a string or null (got ${typeof raw})`);
  }
  if (raw === '') return { ok: true, path: undefined };
  const expanded = expandWhole(raw, env);
  if (!expanded.ok) return expanded;
  const path = expanded.value.trim();
  if (path === '') {
    throw new RegistryConfigError(`${where}: embeddings_path is blank; remove it or set a path such as /v1/embeddings`);
  }
  if (path.split('/').some((segment) => segment === '..')) {
    throw new RegistryConfigError(`${where}: embeddings_path ${JSON.stringify(path)} may not contain '..' segments`);
  }
  return { ok: true, path };
}
