/** Console path patterns (pure: no DOM). */

/**
 * Matches `path` against a pattern of literal segments and `:name` parameters; the parameters
 * (URI-decoded) or undefined.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/').filter(Boolean);
  const have = path.split('/').filter(Boolean);
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.startsWith(':')) {
      try {
        params[w.slice(1)] = decodeURIComponent(h);
      } catch {
        return undefined;
      }
    } else if (w !== h) return undefined;
  }
  return params;
}
