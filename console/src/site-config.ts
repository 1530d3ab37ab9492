/**
 * The site's configuration, read once from `GET /site-config` before anything else is shown: the
 * console's name, links, logo and storage namespace come from it (docs/site-config.md). A failed
 * answer (network error, non-200, not JSON, no 3 s answer, or a body that is not a site
 * configuration) is a configuration error the shell shows with a retry button; the console never
 * guesses a branding.
 */

/** What the console uses of the site configuration. */
export interface SiteView {
  name: string;
  description: string;
  logoUrl: string;
  supportEmail: string;
  docsUrl: string;
  storageNamespace: string;
  links: Array<{ label: string; url: string }>;
  dataPolicyNotice: string;
  publicSignup: boolean;
}

/** Thrown for an unusable `/site-config` answer; `message` says what was wrong. */
export class SiteConfigError extends Error {}

export const SITE_CONFIG_TIMEOUT_MS = 3000;

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

/** Only https URLs and same-origin paths are ever put into the page. */
export function safeUrl(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '';
  if (value.startsWith('/') && !value.startsWith('//')) return value;
  try {
    return new URL(value).protocol === 'https:' ? value : '';
  } catch {
    return '';
  }
}

/** Maps a `/site-config` body to what the console shows; throws `SiteConfigError` when it is not one. */
export function siteViewOf(body: unknown): SiteView {
  const root = record(body);
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('site' in root) || !('features' in root)) {
    throw new SiteConfigError('The site configuration is not valid (no site or features section).');
  }
  const site = record(root.site);
  const features = record(root.features);
  const branding = record(root.branding);
  const brandSite = record(branding.site);
  const images = record(branding.images);
  const named = Object.entries(record(branding.links)).map(([label, url]) => ({ label: label[0]!.toUpperCase() + label.slice(1), url: safeUrl(url) }));
  const header = (Array.isArray(branding.header_links) ? branding.header_links : []).map((l) => ({ label: text(record(l).label), url: safeUrl(record(l).url) }));
  return {
    name: text(site.name, text(record(branding.organization).name)) || 'Gateway',
    description: text(brandSite.description),
    logoUrl: safeUrl(images.logo),
    supportEmail: text(site.support_email),
    docsUrl: safeUrl(site.docs_url),
    storageNamespace: text(branding.storage_namespace, 'console').replace(/[^A-Za-z0-9_.-]/g, '') || 'console',
    links: [...header, ...named].filter((l) => l.url !== '' && l.label !== ''),
    dataPolicyNotice: text(record(branding.data_policy).notice),
    publicSignup: features.public_signup !== false,
  };
}

/** Reads `/site-config` with the 3 s budget. */
export async function loadSiteConfig(fetchImpl: typeof fetch = fetch): Promise<SiteView> {
  let res: Response;
  try {
    res = await fetchImpl('/site-config', { signal: AbortSignal.timeout(SITE_CONFIG_TIMEOUT_MS), headers: { accept: 'application/json' } });
  } catch (err) {
    const name = (err as Error).name;
    throw new SiteConfigError(name === 'TimeoutError' || name === 'AbortError'
      ? `The site configuration did not answer within ${SITE_CONFIG_TIMEOUT_MS / 1000} seconds.`
      : 'The site configuration could not be reached.');
  }
  if (!res.ok) {
    let detail = '';
    try {
      const body = record(await res.json());
      detail = text(record(body.error).message);
    } catch {
      // no JSON detail
    }
    throw new SiteConfigError(`The site configuration answered ${res.status}${detail ? `: ${detail}` : ''}.`);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new SiteConfigError('The site configuration is not valid JSON.');
  }
  return siteViewOf(body);
}
