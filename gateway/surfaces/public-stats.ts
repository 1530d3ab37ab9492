/**
 * `GET /public-stats` (docs/public-stats.md): public, no key. The newest row of
 * `public_stats_snapshots`, published only when the active distribution manifest sets
 * `features.public_stats: true`; otherwise (flag false or absent, a dark, failed or misconfigured
 * manifest, or none at all) 404, as if the endpoint did not exist. With the flag on but no
 * snapshot taken yet (or no database), 404 saying so. A database that does not answer is a 503.
 * A found snapshot is cached in memory for {@link CACHE_MS} so a public endpoint cannot turn
 * visitors into database load (the job writes one snapshot a day).
 */
import type Router from '@koa/router';
import { AppError } from '../../lib/errors';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { newestPublicStats } from '../ops/public-stats/snapshot';
import type { DistributionState } from '../registry/manifest';
import type { DatabaseState } from '../store/database-state';
import type { GatewayState } from './state';

/** How long one read of the newest snapshot is served from memory. */
export const CACHE_MS = 60_000;

/** Whether the distribution publishes public stats (`features.public_stats: true` in an active manifest). */
export function publicStatsEnabled(distribution: DistributionState): boolean {
  return distribution.status === 'active' && distribution.manifest.features?.public_stats === true;
}

/** The router serving `GET /public-stats`. */
export function publicStatsRouter(deps: { distribution: DistributionState; database: DatabaseState; now?: () => number }): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const now = deps.now ?? Date.now;
  // Only a found snapshot is cached: the first one shows as soon as it is written.
  let cached: { at: number; body: string } | undefined;
  router.get('/public-stats', publicAccess(), async (ctx) => {
    if (!publicStatsEnabled(deps.distribution)) {
      throw new AppError('not_found', 'Public stats are not published here (the distribution manifest does not set features.public_stats: true)');
    }
    const db = deps.database.db;
    if (!db) throw new AppError('not_found', 'No public stats snapshot yet (this gateway has no database)');
    if (!cached || now() - cached.at >= CACHE_MS) {
      let newest: Awaited<ReturnType<typeof newestPublicStats>>;
      try {
        newest = await newestPublicStats(db);
      } catch (err) {
        throw new AppError('service_unavailable', 'Public stats cannot be read right now; try again shortly', { cause: err });
      }
      if (!newest) throw new AppError('not_found', 'No public stats snapshot yet: the daily job has not run (npm run public-stats)');
      cached = { at: now(), body: JSON.stringify(newest.content) };
    }
    ctx.set('Cache-Control', `public, max-age=${CACHE_MS / 1000}`);
    ctx.type = 'application/json';
    ctx.body = cached.body;
  });
  documentRoute(router, 'GET', '/public-stats', { statuses: [404, 503], summary: 'The newest public stats snapshot (404 when the distribution does not publish stats or no snapshot exists yet).' });
  return router;
}
