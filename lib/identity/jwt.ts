/**
 * Compact JSON Web Tokens signed with HMAC-SHA256 (the only algorithm accepted: a token naming
 * any other `alg`, including `none`, is rejected). Used for the gateway's access tokens.
 */
import { createHmac } from 'node:crypto';
import { constantTimeEqual } from './constant-time';

export interface JwtClaims {
  sub: string;
  iat: number;
  exp: number;
  [claim: string]: unknown;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

function signature(secret: string, signingInput: string): Buffer {
  return createHmac('sha256', secret).update(signingInput).digest();
}

/** Signs `claims` (plus `iat`, and `exp` = now + `ttlSeconds`). */
export function signJwt(claims: Record<string, unknown> & { sub: string }, secret: string, ttlSeconds: number, nowMs = Date.now()): string {
  const iat = Math.floor(nowMs / 1000);
  const payload = Buffer.from(JSON.stringify({ ...claims, iat, exp: iat + ttlSeconds })).toString('base64url');
  const input = `${HEADER}.${payload}`;
  return `${input}.${signature(secret, input).toString('base64url')}`;
}

/** The claims of a well-formed, correctly signed, unexpired token; otherwise undefined. */
export function verifyJwt(token: string, secret: string, nowMs = Date.now()): JwtClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, sig] = parts as [string, string, string];
  if (header !== HEADER) return undefined;
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
