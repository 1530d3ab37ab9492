/**
 * The branding document (docs/site-config.md): a YAML or JSON file named by the manifest's
 * `site.branding` (relative to the manifest's directory), validated at startup and served to
 * visitors by `GET /site-config`. Everything in it reaches browsers, so the schema is strict:
 * unknown keys are rejected, every key must be present (optional content is an empty string or an
 * empty list), text is bounded and free of control characters, links are `https:` URLs, and
 * images are `https:` URLs or paths under the mounted assets path {@link SITE_ASSETS_PATH}.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** The only branding document version this gateway reads. */
export const BRANDING_VERSION = 1;

/** Where a deployment mounts its branding images; image paths must start with it. */
export const SITE_ASSETS_PATH = '/assets/';

// C0 controls (tab and newline allowed only where noted), DEL, C1 controls, and the bidi overrides.
// eslint-disable-next-line no-control-regex -- these patterns exist to find control characters
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_OR_NEWLINE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** One line of visitor-facing text, at most `max` characters (may be empty). */
function line(max: number) {
  return z.string().max(max).refine((v) => !CONTROL_OR_NEWLINE.test(v), 'must be one line without control characters');
}

/** Several lines of visitor-facing text (newlines and tabs allowed), at most `max` characters. */
function paragraph(max: number) {
  return z.string().max(max).refine((v) => !CONTROL.test(v), 'must not contain control characters (newlines and tabs are allowed)');
}

function isHttpsUrl(value: string): boolean {
  if (!value.startsWith('https://') || CONTROL_OR_NEWLINE.test(value) || /\s/.test(value)) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.hostname !== '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

function isAssetPath(value: string): boolean {
  if (!value.startsWith(SITE_ASSETS_PATH) || value.length === SITE_ASSETS_PATH.length) return false;
  const rest = value.slice(SITE_ASSETS_PATH.length);
  return /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(rest) && !rest.split('/').some((s) => s === '.' || s === '..');
}

/** A link: an `https:` URL; with `optional`, the empty string hides it. */
function link(optional: boolean) {
  return z.string().max(2048).refine((v) => (optional && v === '') || isHttpsUrl(v), optional
    ? 'must be an https:// URL without credentials, or "" to hide the link'
    : 'must be an https:// URL without credentials');
}

/** An image: an `https:` URL or a path under the assets path; with `optional`, the empty string means none. */
function image(optional: boolean) {
  return z.string().max(2048).refine((v) => (optional && v === '') || isHttpsUrl(v) || isAssetPath(v),
    `must be an https:// URL or a path under ${SITE_ASSETS_PATH}${optional ? ', or "" for none' : ''}`);
}

/** An identifier handed to a third-party script (analytics, widget): letters, digits and `_ . : -`. */
const identifier = z.string().max(128).regex(/^[A-Za-z0-9_.:-]*$/, 'letters, digits, _ . : - only (or "" for none)');

const brandingSchema = z.object({
  version: z.literal(BRANDING_VERSION),
  site: z.object({ description: line(300), host: line(253) }).strict(),
  organization: z.object({ name: line(120).min(1, 'must not be empty'), url: link(true) }).strict(),
  links: z.object({
    home: link(true), docs: link(true), support: link(true), status: link(true),
    terms: link(true), privacy: link(true), source: link(true),
  }).strict(),
  header_links: z.array(z.object({ label: line(40).min(1, 'must not be empty'), url: link(false) }).strict()).max(8),
  quickstart: z.object({ model: line(128), example: paragraph(4000) }).strict(),
  analytics: z.object({ measurement_id: identifier, project_key: identifier }).strict(),
  widget_key: identifier,
  storage_namespace: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'lowercase letters, digits, _ and -, starting with a letter, at most 32 characters'),
  data_policy: z.object({ notice: paragraph(1000), url: link(true) }).strict(),
  images: z.object({ logo: image(true), logo_dark: image(true), favicon: image(true), social_card: image(true) }).strict(),
  sponsors: z.array(z.object({
    name: line(120).min(1, 'must not be empty'), image: image(false), url: link(true), size: z.enum(['small', 'medium', 'large']),
  }).strict()).max(24),
}).strict();

/** A validated branding document, as `/site-config` serves it. */
export type Branding = z.infer<typeof brandingSchema>;

/** The branding served when no active manifest names one: nothing shown but the site's name. */
export function neutralBranding(siteName: string): Branding {
  return {
    version: BRANDING_VERSION,
    site: { description: '', host: '' },
    organization: { name: siteName, url: '' },
    links: { home: '', docs: '', support: '', status: '', terms: '', privacy: '', source: '' },
    header_links: [],
    quickstart: { model: '', example: '' },
    analytics: { measurement_id: '', project_key: '' },
    widget_key: '',
    storage_namespace: 'gateway',
    data_policy: { notice: '', url: '' },
    images: { logo: '', logo_dark: '', favicon: '', social_card: '' },
    sponsors: [],
  };
}

/** Reads and validates a branding document; throws naming the file and the failing key. */
export function readBranding(path: string): Branding {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`branding document ${path}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = brandingSchema.safeParse(doc, {
    error: (issue) => (issue.input === undefined && issue.code === 'invalid_type' ? 'is required (use "" or [] for no content)' : undefined),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.join('.') || '(document)';
    const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    throw new Error(`branding document ${path}: ${where}: ${issue.message}${keys}`);
  }
  return parsed.data;
}
