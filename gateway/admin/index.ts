/**
 * The gateway admin API: one router per area, all behind {@link adminGuard} (mounted
 * by the app for every `/admin` path). Add an area by listing its router here.
 */
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps';
import type { GatewayState } from '../surfaces/state';
import { automationScoreRouter } from './automation-score';
import { identityAdminRouter } from './identity-admin';
import { modelsAdminRouter } from './models';
import { playgroundRouter } from './playground';
import { policiesRouter } from './policies';
import { providerKeysRouter } from './provider-keys';
import { providersRouter } from './providers';
import { recentRequestsRouter } from './recent-requests';
import { retargetRouter } from './retarget';
import { routingRouter } from './routing';
import { runtimeRoutesRouter } from './runtime-routes';
import { settingsAdminRouter } from './settings-admin';

export function adminRouters(deps: GatewayDeps): Array<Router<GatewayState>> {
  return [
    identityAdminRouter(deps), settingsAdminRouter(deps), recentRequestsRouter(deps),
    routingRouter(deps), runtimeRoutesRouter(deps), retargetRouter(deps), modelsAdminRouter(deps), policiesRouter(deps), providersRouter(deps), providerKeysRouter(deps),
    automationScoreRouter(deps), playgroundRouter(deps),
  ];
}
