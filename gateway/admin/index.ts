/**
 * The gateway admin API (spec 4.3): one router per area, all behind {@link adminGuard} (mounted
 * by the app for every `/admin` path). Add an area by listing its router here.
 */
import type Router from '@koa/router';
import type { GatewayDeps } from '../app';
import type { GatewayState } from '../surfaces/state';
import { recentRequestsRouter } from './recent-requests';

export function adminRouters(deps: GatewayDeps): Array<Router<GatewayState>> {
  return [recentRequestsRouter(deps)];
}
