/**
 * `GET /site-config` (docs/site-config.md): public, no key. What a console or docs page needs to
 * brand itself: the site identity (`SITE_*` variables, then the active manifest, then neutral
 * defaults), the active manifest's `site:` and `features:` (with `public_signup` reporting whether
 * sign-up is open right now), and the branding document (neutral when none is active).
 * A misconfigured distribution (invalid mode, or an active manifest that failed to load) answers
 * 503 so the console shows a configuration error instead of a half-branded page.
 * `Cache-Control: no-cache` with an `ETag`: browsers revalidate on each load (a 304 when nothing
 * changed), so a restart with new branding shows at once.
 */
import type Router from '@koa/router';
import { createHash } from 'node:crypto';
import { AppError } from '../../lib/errors';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { GatewayDeps } from '../deps';
import { signupState } from '../identity/signup-policy';
import { siteIdentity } from '../identity/site-identity';
import { neutralBranding, type Branding } from '../registry/branding';
import type { GatewayState } from './state';

/** The body of `GET /site-config`. */
export interface SiteConfig {
  site: {
    name: string;
    public_base_url: string;
    docs_url: string;
    support_email: string;
    terms_document: string;
    privacy_document: string;
  };
  features: { public_signup: boolean; public_stats: boolean; rag: boolean; routers: string[] };
  branding: Branding;
}

type SiteConfigDeps = Pick<GatewayDeps, 'distribution' | 'settings' | 'siteSettings' | 'database'>;

/** The site configuration; throws 503 when the distribution configuration is broken. */
export function siteConfig(deps: SiteConfigDeps): SiteConfig {
  const d = deps.distribution;
  if (d.status === 'misconfigured') {
    throw new AppError('service_unavailable', `Site configuration unavailable: ${d.reason}`);
  }
  if (d.status === 'failed') {
    throw new AppError('service_unavailable', 'Site configuration unavailable: the active distribution manifest failed to load (see the gateway log)');
  }
  const identity = siteIdentity(deps.settings, d);
  const manifest = d.status === 'active' ? d.manifest : undefined;
  return {
    site: {
      name: identity.name,
      public_base_url: identity.publicBaseUrl,
      docs_url: identity.docsUrl,
      support_email: identity.supportEmail,
      terms_document: manifest?.site?.terms_document ?? '',
      privacy_document: manifest?.site?.privacy_document ?? '',
    },
    features: {
      public_signup: signupState(deps).open,
      public_stats: manifest?.features?.public_stats ?? false,
      rag: manifest?.features?.rag ?? false,
      routers: manifest?.features?.routers ?? [],
    },
    branding: (d.status === 'active' ? d.branding : undefined) ?? neutralBranding(identity.name),
  };
}

/** The router serving `GET /site-config`. */
export function siteConfigRouter(deps: SiteConfigDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  router.get('/site-config', publicAccess(), (ctx) => {
    const body = JSON.stringify(siteConfig(deps));
    ctx.set('Cache-Control', 'no-cache');
    ctx.etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    ctx.type = 'application/json';
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = body;
  });
  documentRoute(router, 'GET', '/site-config', { statuses: [503], summary: 'Site identity, features and branding (503 when the distribution configuration is broken).' });
  return router;
}
