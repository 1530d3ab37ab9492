/**
 * Compact JSON Web Tokens signed with HMAC-SHA256 (the only algorithm accepted: a token naming
 * any other `alg`, including `none`, is rejected). Used for the gateway's access tokens.
 *
 * A token signed by a rotated key names it in the header (`kid`); a token of the configured
 * bootstrap secret has no `kid` (the header every earlier version wrote, so tokens issued before an
 * upgrade keep verifying). The verifier asks a resolver for the secret of the named key: an unknown
 * or retired `kid` has none, and the token is refused.
 */
import { createHmac } from 'node:crypto';
import { constantTimeEqual } from './constant-time';

export interface JwtClaims {
  sub: string;
  iat: number;
  exp: number;
  [claim: string]: unknown;
}

/** The key a token is signed with: its secret, and its id (absent for the bootstrap secret). */
export interface JwtKey {
  secret: string;
  kid?: string | undefined;
}

/** The secret that verifies tokens of key `kid` (undefined: the bootstrap secret), if it still does. */
export type JwtKeyResolver = (kid: string | undefined) => string | undefined;

const BOOTSTRAP_HEADER = encodeHeader(undefined);
const KID = /^[A-Za-z0-9_-]{1,64}$/;

function encodeHeader(kid: string | undefined): string {
  return Buffer.from(JSON.stringify(kid === undefined ? { alg: 'HS256', typ: 'JWT' } : { alg: 'HS256', typ: 'JWT', kid })).toString('base64url');
}

/** The key id of a header this verifier accepts (undefined for the bootstrap header), or null for any other header. */
function headerKid(header: string): string | undefined | null {
  if (header === BOOTSTRAP_HEADER) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const kid = (parsed as { kid?: unknown } | null)?.kid;
  // Only the exact header this module writes: no other algorithm, no extra members.
  if (typeof kid !== 'string' || !KID.test(kid) || encodeHeader(kid) !== header) return null;
  return kid;
}

function signature(secret: string, signingInput: string): Buffer {
  return createHmac('sha256', secret).update(signingInput).digest();
}

/** Signs `claims` (plus `iat`, and `exp` = now + `ttlSeconds`) with `key` (a bare string: the bootstrap secret). */
export function signJwt(claims: Record<string, unknown> & { sub: string }, key: string | JwtKey, ttlSeconds: number, nowMs = Date.now()): string {
  const { secret, kid } = typeof key === 'string' ? { secret: key, kid: undefined } : key;
  const iat = Math.floor(nowMs / 1000);
  const payload = Buffer.from(JSON.stringify({ ...claims, iat, exp: iat + ttlSeconds })).toString('base64url');
  const input = `${kid === undefined ? BOOTSTRAP_HEADER : encodeHeader(kid)}.${payload}`;
  return `${input}.${signature(secret, input).toString('base64url')}`;
}

/** The claims of a well-formed, correctly signed, unexpired token; otherwise undefined. */
export function verifyJwt(token: string, keys: string | JwtKeyResolver, nowMs = Date.now()): JwtClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, sig] = parts as [string, string, string];
  const kid = headerKid(header);
  if (kid === null) return undefined;
  const secret = typeof keys === 'string' ? (kid === undefined ? keys : undefined) : keys(kid);
  if (secret === undefined) return undefined;
  const expected = signature(secret, `${header}.${payload}`);
  const presented = Buffer.from(sig, 'base64url');
  if (!constantTimeEqual(presented, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { sub, exp, iat } = claims as Record<string, unknown>;
  if (typeof sub !== 'string' || typeof exp !== 'number' || typeof iat !== 'number') return undefined;
  if (exp * 1000 <= nowMs) return undefined;
  return claims as JwtClaims;
}

/** The `kid` a token's header names (undefined for a bootstrap token or a malformed one); for tests and logs. */
export function jwtKid(token: string): string | undefined {
  const kid = headerKid(token.split('.')[0] ?? '');
  return kid ?? undefined;
}
