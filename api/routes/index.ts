/**
 * Every router of the control-plane API, in the order they are mounted.
 */
import type Router from '@koa/router';
import type { ApiDeps } from '../app';
import { apiHealthRouter } from './health';
import { hostsRouter } from './hosts';
import { workspaceArchiveRouter } from './workspace-archive';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routers carry their own state types
export function apiRouters(deps: ApiDeps): Array<Router<any>> {
  return [
    apiHealthRouter(deps),
    hostsRouter(deps.db),
    workspaceArchiveRouter(deps),
  ];
}
