/**
 * Adapter kinds: the built-in profiles, the `aggregator[<slug>]` bracket form, and an extension
 * registry that backend extensions fill. Extension kinds are looked up before built-in ones.
 */
import { AppError } from '../../lib/errors';

/** How an adapter speaks to its upstream. */
export type AdapterFamily = 'compat' | 'aggregator' | 'message_format';

/**
 * How the chat-completions path is joined onto a base URL (trailing slashes removed first):
 * - `direct`: always `<base>/chat/completions` (self-hosted engines; vendor_c, whose base carries its version).
 * - `versioned`: `<base>/chat/completions` when the base ends in a version segment (`/v1`, `/v4`, …),
 *   otherwise `<base>/v1/chat/completions`.
 */
export type ChatPathStyle = 'direct' | 'versioned';

/** Options a profile may turn into extra upstream headers (the site identity, docs/site-config.md). */
export interface HeaderOptions {
  /** Site name sent by the aggregator profile as `X-Title`. */
  readonly siteName?: string | undefined;
  /** Site public base URL sent by the aggregator profile as `HTTP-Referer`. */
  readonly siteUrl?: string | undefined;
}

/** Extra headers of a profile, given the header options; `undefined` when none apply. */
export type ProfileHeaders = (options: HeaderOptions) => Readonly<Record<string, string>> | undefined;

/**
 * How a message-format kind speaks its messages API (docs/adapters.md):
 * - `auth`: `x-api-key: <key>`, or `Authorization: Bearer <key>`.
 * - `version`: the API version sent as the `anthropic-version` header, or as `anthropic_version` in the body.
 * - `path`: `messages` (`<base>[/v1]/messages`, model in the body) or `raw_predict`
 *   (`<base>/models/<provider_model_id>:rawPredict` / `:streamRawPredict`, no model in the body).
 */
export interface MessagesDialect {
  readonly auth: 'x-api-key' | 'bearer';
  readonly version: { readonly in: 'header' | 'body'; readonly value: string };
  readonly path: 'messages' | 'raw_predict';
}

/** Everything the wire layer needs to know about one adapter kind. */
export interface AdapterProfile {
  readonly kind: string;
  readonly family: AdapterFamily;
  /** Human-readable name for logs and admin views. */
  readonly label: string;
  readonly chatPathStyle: ChatPathStyle;
  /** The upstream is a metered vendor API whose responses carry the token usage that is billed. */
  readonly usageProfile: boolean;
  /** Sub-provider pinned by `aggregator[<slug>]`; sent as `provider.order` without fallbacks. */
  readonly pinnedProvider: string | undefined;
  readonly extraHeaders: ProfileHeaders | undefined;
  /** Message-format kinds only: how the messages API is reached (default {@link DIRECT_MESSAGES}). */
  readonly messages: MessagesDialect | undefined;
}

/** What an extension gives when registering a kind; omitted fields take compat defaults. */
export type AdapterProfileInit = Partial<Omit<AdapterProfile, 'kind'>>;

/** Thrown for a kind that is neither built in nor registered; renders as `ValueError: Unknown adapter kind: <kind>`. */
export class UnknownAdapterKindError extends Error {
  constructor(readonly kind: string) {
    super(`Unknown adapter kind: ${kind}`);
    this.name = 'ValueError';
  }
}

/** `vendor_h_direct`: `x-api-key` and the `anthropic-version` header, `POST <base>/v1/messages`. */
export const DIRECT_MESSAGES: MessagesDialect = Object.freeze<MessagesDialect>({ auth: 'x-api-key', version: { in: 'header', value: '2023-06-01' }, path: 'messages' });
/** `vendor_g_api`: a bearer key, the version header, `POST <base>/v1/messages`. */
const BEARER_MESSAGES: MessagesDialect = Object.freeze<MessagesDialect>({ auth: 'bearer', version: { in: 'header', value: '2023-06-01' }, path: 'messages' });
/** `vendor_h_cloud`: a bearer token, the version in the body, `:rawPredict` / `:streamRawPredict` per model. */
const CLOUD_MESSAGES: MessagesDialect = Object.freeze<MessagesDialect>({ auth: 'bearer', version: { in: 'body', value: 'vertex-2023-10-16' }, path: 'raw_predict' });

function profile(kind: string, init: AdapterProfileInit = {}): AdapterProfile {
  const family = init.family ?? 'compat';
  return Object.freeze({
    kind,
    family,
    label: init.label ?? kind,
    chatPathStyle: init.chatPathStyle ?? 'versioned',
    usageProfile: init.usageProfile ?? false,
    pinnedProvider: init.pinnedProvider,
    extraHeaders: init.extraHeaders,
    messages: family === 'message_format' ? init.messages ?? DIRECT_MESSAGES : undefined,
  });
}

/** The aggregator attributes traffic to an app by its referring URL and title. */
const aggregatorHeaders: ProfileHeaders = (options) => {
  if (!options.siteName && !options.siteUrl) return undefined;
  return { ...(options.siteUrl ? { 'HTTP-Referer': options.siteUrl } : {}), ...(options.siteName ? { 'X-Title': options.siteName } : {}) };
};

const aggregatorInit: AdapterProfileInit = { family: 'aggregator', label: 'Aggregator', extraHeaders: aggregatorHeaders };

const builtins: ReadonlyMap<string, AdapterProfile> = new Map([
  profile('generic_compat', { label: 'Generic chat-completions' }),
  profile('staging', { label: 'Staging' }),
  profile('engine_a', { label: 'Engine A (self-hosted)', chatPathStyle: 'direct' }),
  profile('engine_b', { label: 'Engine B (self-hosted)', chatPathStyle: 'direct' }),
  profile('engine_c', { label: 'Engine C (self-hosted)', chatPathStyle: 'direct' }),
  profile('hosted_a', { label: 'Hosted A' }),
  profile('hosted_b', { label: 'Hosted B' }),
  profile('cliproxy', { label: 'CLI proxy' }),
  profile('vendor_a', { label: 'Vendor A', usageProfile: true }),
  profile('vendor_d', { label: 'Vendor D', usageProfile: true }),
  profile('vendor_b', { label: 'Vendor B', usageProfile: true }),
  profile('vendor_c', { label: 'Vendor C', chatPathStyle: 'direct' }),
  profile('aggregator', aggregatorInit),
  profile('vendor_g_api', { family: 'message_format', label: 'Vendor G API', messages: BEARER_MESSAGES }),
  profile('vendor_h_cloud', { family: 'message_format', label: 'Vendor H cloud', messages: CLOUD_MESSAGES }),
  profile('vendor_h_direct', { family: 'message_format', label: 'Vendor H direct', messages: DIRECT_MESSAGES }),
].map((p) => [p.kind, p]));

/** The built-in kinds, excluding the open-ended `aggregator[<slug>]` form. */
export const BUILTIN_ADAPTER_KINDS: readonly string[] = Object.freeze([...builtins.keys()]);

const PINNED_PREFIX = 'aggregator[';
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
const MAX_CACHED_PINS = 256;
const pinnedProfiles = new Map<string, AdapterProfile>();

/** The profile of `aggregator[<slug>]`, or `undefined` when `kind` is not of that form. */
function pinnedAggregator(kind: string): AdapterProfile | undefined {
  const cached = pinnedProfiles.get(kind);
  if (cached !== undefined) return cached;
  if (!kind.startsWith(PINNED_PREFIX) || !kind.endsWith(']')) return undefined;
  const slug = kind.slice(PINNED_PREFIX.length, -1);
  if (!SLUG.test(slug)) return undefined;
  const pinned = profile(kind, { ...aggregatorInit, label: `Aggregator (${slug})`, pinnedProvider: slug });
  if (pinnedProfiles.size < MAX_CACHED_PINS) pinnedProfiles.set(kind, pinned);
  return pinned;
}

/** The built-in profile of a kind (including `aggregator[<slug>]`), or `undefined`. */
export function builtinAdapterProfile(kind: string): AdapterProfile | undefined {
  return builtins.get(kind) ?? pinnedAggregator(kind);
}

/**
 * Kinds registered by backend extensions. `resolve` checks them before the built-ins, so an
 * extension may also replace a built-in kind; registering the same kind twice is an error.
 */
export class AdapterKindRegistry {
  private readonly extensions = new Map<string, AdapterProfile>();

  /** Registers an extension kind and returns its profile. */
  register(kind: string, init: AdapterProfileInit = {}): AdapterProfile {
    if (kind.length === 0) throw new TypeError('Adapter kind must be a non-empty string');
    if (this.extensions.has(kind)) throw new Error(`Adapter kind already registered by an extension: ${kind}`);
    const registered = profile(kind, init);
    this.extensions.set(kind, registered);
    return registered;
  }

  /** Whether an extension registered this exact kind. */
  hasExtension(kind: string): boolean {
    return this.extensions.has(kind);
  }

  /** The profile of a kind: extensions first, then built-ins. Throws {@link UnknownAdapterKindError}. */
  resolve(kind: string): AdapterProfile {
    const found = this.extensions.get(kind) ?? builtinAdapterProfile(kind);
    if (found === undefined) throw new UnknownAdapterKindError(kind);
    return found;
  }
}

/** A fresh registry holding no extension kinds (tests, isolated gateways). */
export function createAdapterKindRegistry(): AdapterKindRegistry {
  return new AdapterKindRegistry();
}

/** The process-wide registry backend extensions register into. */
export const defaultAdapterKindRegistry: AdapterKindRegistry = createAdapterKindRegistry();

/** Registers an extension kind (in the default registry unless another is given). */
export function registerAdapterKind(
  kind: string,
  init: AdapterProfileInit = {},
  registry: AdapterKindRegistry = defaultAdapterKindRegistry,
): AdapterProfile {
  return registry.register(kind, init);
}

/** Resolves a kind (in the default registry unless another is given). Throws {@link UnknownAdapterKindError}. */
export function resolveAdapterKind(kind: string, registry: AdapterKindRegistry = defaultAdapterKindRegistry): AdapterProfile {
  return registry.resolve(kind);
}

/** Throws a 501 `not_implemented` for an embeddings request on a message-format kind (messages APIs have no embeddings). */
export function assertEmbeddingsBuildable(adapter: AdapterProfile): void {
  if (adapter.family === 'message_format') {
    throw new AppError('not_implemented', `Adapter kind ${adapter.kind} serves no embeddings`);
  }
}
