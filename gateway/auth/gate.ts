/**
 * Admission of a request that presents credentials (docs/identity.md): the auth-failure blocklist
 * is consulted first, before the presented credential is read, so a blocked source gets 429 even
 * with a corrected key; then the credential is checked, and a failed check is counted against the
 * source and logged as `auth_failure` (WARNING). A request without any credential is refused
 * (401) but not counted: only presented credentials that fail count as failures.
 */
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import { secretPrefix } from '../../lib/crypto';
import { bearerToken } from '../../lib/http/json-body';
import type { Rejection } from '../surfaces/request-record';
import { BLOCKED_MESSAGE, blocklistSource, type AuthFailureBlocklist } from './auth-failure-blocklist';
import { unauthorizedVia, type Authenticator, type Caller, type CredentialHeader } from './caller';
import type { ClientIpInfo } from '../../lib/client-address/client-address';

/**
 * What the gate tells the alert engine (docs/alerts.md): each failed authentication and each new
 * block, with strings the gate already holds. Implementations must be O(1) and allocation-light.
 */
export interface AuthAlerts {
  /** One failed authentication: the blocklist source, the client address, the presented key's prefix (if any), why, and the path. */
  authFailure(source: string, address: string, keyPrefix: string | undefined, reason: string, path: string): void;
  /** A source was just blocklisted. */
  ipBlocked(source: string, address: string): void;
}

/** Where a refusal is recorded (the request state). */
export interface RejectionTarget {
  rejection?: Rejection;
}

export interface GateOptions {
  /** `AUTH_FAILURE_IDENTIFY_CALLER`: name the account of a failed key in `auth_failure` lines. */
  identifyCaller: boolean;
}

/** 429 for a blocked source. */
export function blockedError(): AppError {
  return new AppError('rate_limited', BLOCKED_MESSAGE);
}

export class AuthGate {
  /** The alert engine (`ALERTS_ENABLED=true`): told of each failure and each new block, off the success path. */
  alerts: AuthAlerts | undefined;

  constructor(
    readonly authenticator: Authenticator,
    readonly blocklist: AuthFailureBlocklist,
    private readonly log: Logger,
    private readonly options: GateOptions,
  ) {}

  /** Throws 429 when the client's source is blocked; `into.rejection` gets the label of what was presented. */
  refuseBlocked(client: ClientIpInfo, authorization: string | undefined, into?: RejectionTarget): void {
    if (!this.blocklist.blocked(client)) return;
    if (into) {
      const result = this.authenticator.check(authorization);
      into.rejection = { reason: 'ip_blocked', credentialState: result.ok ? 'valid' : result.state };
    }
    throw blockedError();
  }

  /**
   * Counts a failed authentication of `client` and logs it. `credential` is what was presented
   * (only its prefix is logged); `userId` names the account when known and identification is on.
   */
  recordFailure(client: ClientIpInfo, details: { path: string; reason: string; credential?: string | undefined; userId?: number | undefined }): void {
    const started = this.blocklist.recordFailure(client);
    const source = blocklistSource(client);
    const keyPrefix = details.credential ? secretPrefix(details.credential) : undefined;
    this.log.warn({
      event: 'auth_failure',
      reason: details.reason,
      path: details.path,
      client_ip: client.client_ip,
      ip_source: client.source,
      source,
      ...(keyPrefix ? { key_prefix: keyPrefix } : {}),
      ...(this.options.identifyCaller && details.userId !== undefined ? { user_id: details.userId } : {}),
    }, 'auth_failure');
    this.alerts?.authFailure(source, client.client_ip, keyPrefix, details.reason, details.path);
    if (started) {
      this.log.warn({ event: 'auth_ip_blocked', source, client_ip: client.client_ip }, `auth_ip_blocked: ${source} refused after repeated authentication failures`);
      this.alerts?.ipBlocked(source, client.client_ip);
    }
  }

  /**
   * The caller of an inference request, or 429 (blocked) / 401 (no valid key). `authorization` is
   * the `Authorization` value (an `X-Api-Key` as `Bearer <key>`); `header` says where it was read
   * from (the 401 names it).
   */
  admit(client: ClientIpInfo, authorization: string | undefined, path: string, into?: RejectionTarget, header: CredentialHeader = 'authorization'): Caller {
    this.refuseBlocked(client, authorization, into);
    const result = this.authenticator.check(authorization);
    if (result.ok) return result.caller;
    if (result.state !== 'missing') {
      this.recordFailure(client, { path, reason: result.state, credential: bearerToken(authorization), userId: result.key?.userId });
    }
    if (into) into.rejection = { reason: result.state === 'missing' ? 'missing_api_key' : 'invalid_api_key', credentialState: result.state };
    throw unauthorizedVia(header, result.state !== 'missing');
  }
}
