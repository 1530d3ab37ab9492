/**
 * Which methods a walk over a route table (the authorization walk, the bad-input fuzz) sends to a
 * route. A route serving every method (the database tool's proxy, docs/agent-admin.md "Database
 * tool") is one route with one guard whatever the method, so it is walked with the common methods
 * and two rarer ones, not with all thirty-odd of them.
 */
import type { RouteEntry } from '../../lib/http/route-access';

const COMMON = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const RARE_SAMPLE = ['PROPFIND', 'MKCOL'];

export function methodsToWalk(route: RouteEntry, options: { rare: boolean } = { rare: true }): string[] {
  const common = route.methods.filter((method) => COMMON.has(method));
  if (common.length === route.methods.length) return route.methods;
  const rare = route.methods.filter((method) => !COMMON.has(method));
  return [...common, ...(options.rare ? RARE_SAMPLE.filter((method) => rare.includes(method)) : [])];
}
