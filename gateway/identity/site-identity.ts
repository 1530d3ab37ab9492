/**
 * The site's identity (docs/site-config.md): its name, public base URL, documentation URL and
 * support e-mail, as e-mails, upstream headers and `GET /site-config` show them. Each comes from
 * its `SITE_*` variable when set, then from the active distribution manifest (a dark manifest is
 * not applied), then from a neutral default.
 */
import type { Settings } from '../../lib/settings';
import type { DistributionState } from '../registry/manifest';

/** The name shown when neither `SITE_NAME` nor an active manifest names the site. */
export const NEUTRAL_SITE_NAME = 'Inference Gateway';

export interface SiteIdentity {
  name: string;
  publicBaseUrl: string;
  /** `''` when none is configured. */
  docsUrl: string;
  /** `''` when none is configured. */
  supportEmail: string;
}

/** The site identity from the settings and the distribution's state. */
export function siteIdentity(settings: Settings, distribution: DistributionState): SiteIdentity {
  const active = distribution.status === 'active' ? distribution : undefined;
  return {
    name: settings.SITE_NAME ?? nonEmpty(active?.manifest.distribution?.display_name) ?? NEUTRAL_SITE_NAME,
    publicBaseUrl: settings.SITE_PUBLIC_BASE_URL ?? nonEmpty(active?.manifest.site?.public_base_url) ?? `http://localhost:${settings.GATEWAY_PORT}`,
    docsUrl: settings.SITE_DOCS_URL ?? nonEmpty(active?.branding?.links.docs) ?? '',
    supportEmail: settings.SITE_SUPPORT_EMAIL ?? nonEmpty(active?.manifest.site?.support_email) ?? '',
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
