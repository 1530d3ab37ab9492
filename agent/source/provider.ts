/**
 * The seam of a source-control provider's OAuth and account wire (docs/source-control.md): the
 * authorize URL an owner opens, the token endpoint (code exchange and refresh), who the token
 * belongs to, and which repositories the connection may access. Two implementations: the
 * source-control app (GitHub, `github-provider.ts`) and Gitea (`gitea-provider.ts`, with PKCE).
 *
 * Failures come as {@link ProviderError}: `refused` when the provider answered that the code,
 * token or refresh token is not (or no longer) valid, `unavailable` when it did not answer in
 * time, answered 5xx, or answered something this code cannot read. Tokens never appear in an
 * error's message.
 */
import { z } from 'zod';
import { textProblem } from '../../lib/text';

export type ProviderName = 'github' | 'gitea';
export const PROVIDER_NAMES: readonly ProviderName[] = ['github', 'gitea'];

/** The tokens a token endpoint issued; expiries are absolute, null when the provider set none. */
export interface TokenSet {
  accessToken: string;
  accessTokenExpiresAt: Date | null;
  refreshToken: string | null;
  refreshTokenExpiresAt: Date | null;
  scopes: string;
}

/** The provider's account a token belongs to. */
export interface ProviderUser {
  id: string;
  login: string;
}

/** One repository the connection may access, as the provider names it. */
export interface RepoGrant {
  fullName: string;
  url: string;
  permissions: Record<string, boolean>;
}

export interface ScmProvider {
  readonly name: ProviderName;
  /** Whether the authorization-code flow carries a PKCE (S256) challenge. */
  readonly pkce: boolean;
  /** The page the owner opens to consent; `codeChallenge` only when {@link pkce}. */
  authorizeUrl(state: string, codeChallenge?: string): string;
  /** Exchanges an authorization code (with the PKCE verifier when {@link pkce}). */
  exchangeCode(code: string, codeVerifier?: string): Promise<TokenSet>;
  /** Spends a refresh token (single use at the provider) for a new token pair. */
  refresh(refreshToken: string): Promise<TokenSet>;
  user(accessToken: string): Promise<ProviderUser>;
  /** Every repository the connection may access (bounded, see {@link MAX_GRANTS}). */
  repositories(accessToken: string): Promise<RepoGrant[]>;
}

/** Most repositories kept per account: a listing past it is cut (docs/source-control.md). */
export const MAX_GRANTS = 5000;

/** Why a provider call did not give what was asked. */
export class ProviderError extends Error {
  constructor(readonly kind: 'refused' | 'unavailable', readonly provider: ProviderName, message: string) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** A string from a provider that passes the text rule (lib/text.ts) and a length bound. */
export const providerText = (max: number) => z.string().min(1).max(max).refine((s) => textProblem(s) === undefined, 'breaks the text rule');

const tokenAnswer = z.object({
  access_token: z.string().min(1).max(8192).optional(),
  refresh_token: z.string().min(1).max(8192).optional(),
  expires_in: z.coerce.number().int().positive().optional(),
  refresh_token_expires_in: z.coerce.number().int().positive().optional(),
  scope: z.string().max(2048).optional(),
  error: z.string().max(200).optional(),
});

const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** A bounded HTTP call to a provider; network failures and timeouts are `unavailable`. */
export async function providerFetch(provider: ProviderName, url: string, init: RequestInit, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'the connection failed';
    throw new ProviderError('unavailable', provider, `${provider} did not answer: ${reason}`);
  }
  const bytes = Buffer.from(await res.arrayBuffer().catch(() => new ArrayBuffer(0)));
  if (bytes.length > MAX_ANSWER_BYTES) throw new ProviderError('unavailable', provider, `${provider} answered more than ${MAX_ANSWER_BYTES} bytes`);
  let body: unknown;
  try {
    body = bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
  } catch {
    body = undefined;
  }
  if (res.status >= 500) throw new ProviderError('unavailable', provider, `${provider} answered ${res.status}`);
  return { status: res.status, body };
}

/**
 * Posts a form to an OAuth token endpoint and reads the token pair. An OAuth `error` (GitHub
 * answers it with 200, Gitea with 400) or a 4xx is `refused`; no `access_token` is `unavailable`.
 */
export async function postTokenForm(provider: ProviderName, url: string, form: Record<string, string>, timeoutMs: number, now = new Date()): Promise<TokenSet> {
  const { status, body } = await providerFetch(provider, url, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  }, timeoutMs);
  const parsed = tokenAnswer.safeParse(body);
  const error = parsed.success ? parsed.data.error : undefined;
  if (error !== undefined || (status >= 400 && status < 500)) {
    const code = error !== undefined && textProblem(error) === undefined ? error : `HTTP ${status}`;
    throw new ProviderError('refused', provider, `${provider} refused the grant (${code})`);
  }
  if (!parsed.success || !parsed.data.access_token) throw new ProviderError('unavailable', provider, `${provider}'s token endpoint answered without a token`);
  const at = (seconds: number | undefined) => (seconds === undefined ? null : new Date(now.getTime() + seconds * 1000));
  return {
    accessToken: parsed.data.access_token,
    accessTokenExpiresAt: at(parsed.data.expires_in),
    refreshToken: parsed.data.refresh_token ?? null,
    refreshTokenExpiresAt: at(parsed.data.refresh_token_expires_in),
    scopes: parsed.data.scope ?? '',
  };
}

/** Reads an authenticated API answer: 401 is `refused` (token revoked or expired), other 4xx or a bad shape `unavailable`. */
export function apiAnswer<T>(provider: ProviderName, what: string, answer: { status: number; body: unknown }, schema: z.ZodType<T>): T {
  if (answer.status === 401) throw new ProviderError('refused', provider, `${provider} refused the token when reading ${what} (401)`);
  if (answer.status !== 200) throw new ProviderError('unavailable', provider, `${provider} answered ${answer.status} when reading ${what}`);
  const parsed = schema.safeParse(answer.body);
  if (!parsed.success) throw new ProviderError('unavailable', provider, `${provider}'s answer for ${what} was not understood`);
  return parsed.data;
}
