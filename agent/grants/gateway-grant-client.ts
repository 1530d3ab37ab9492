/**
 * The control plane's client of the gateway's grant dispatch endpoints
 * (docs/agent-grants.md): issue, renew and revoke inference grants, and check that an owner may
 * run agent turns on a model, with `GATEWAY_GRANT_DISPATCH_TOKEN`. The paths and bodies are the
 * contract of lib/contracts/grant-dispatch.ts; calls go through the internal JSON client, so each
 * has a timeout and its errors name the call and the gateway's status and message, never the
 * dispatch token or a grant token.
 */
import type { RequestOf } from '../../lib/contracts/endpoint';
import { grantIssue, grantRenew, grantRevoke, modelCheck, type GrantKind } from '../../lib/contracts/grant-dispatch';
import { InternalCallError, InternalClient } from '../../lib/http/internal-client';

export interface GrantIssueInput {
  userId: number;
  model: string;
  kind: GrantKind;
  jobId?: string;
  attemptId?: string;
  hostId?: string;
  groupId?: string | null;
  generation?: number | null;
  operationId?: string;
  ttlSeconds?: number;
}

export interface IssuedGatewayGrant {
  grantId: string;
  /** The `agr_…` token: hand it to its user only; never log or persist it. */
  token: string;
  expiresAt: string;
  /** The granted public model id. */
  model: string;
}

/**
 * A dispatch call the gateway refused or that could not be made: `status` (undefined when no
 * answer came), `timedOut`, and the gateway's `code` (`model_not_found`, `forbidden`, …).
 */
export class GrantDispatchError extends InternalCallError {}

export interface GatewayGrantClientOptions {
  /** The gateway's base URL; a function is read at each call (the `gateway_api_url` admin setting). */
  gatewayUrl: string | (() => string);
  dispatchToken: string;
  /** Per-call timeout; default 10 s (lib/http/internal-client.ts). */
  timeoutMs?: number;
}

export class GatewayGrantClient {
  private readonly http: InternalClient;

  constructor(opts: GatewayGrantClientOptions) {
    this.http = new InternalClient({ service: 'gateway', baseUrl: opts.gatewayUrl, token: opts.dispatchToken, timeoutMs: opts.timeoutMs, errorClass: GrantDispatchError });
  }

  /** Issues a grant (a `turn` grant issued again for the same attempt rotates its token). */
  async issue(input: GrantIssueInput): Promise<IssuedGatewayGrant> {
    const body: RequestOf<typeof grantIssue> = {
      user_id: input.userId, model: input.model, kind: input.kind,
      ...(input.jobId !== undefined ? { job_id: input.jobId } : {}),
      ...(input.attemptId !== undefined ? { attempt_id: input.attemptId } : {}),
      ...(input.hostId !== undefined ? { host_id: input.hostId } : {}),
      ...(input.groupId !== undefined ? { group_id: input.groupId } : {}),
      ...(input.generation !== undefined ? { generation: input.generation } : {}),
      ...(input.operationId !== undefined ? { operation_id: input.operationId } : {}),
      ...(input.ttlSeconds !== undefined ? { ttl_seconds: input.ttlSeconds } : {}),
    };
    const out = await this.http.call(grantIssue, { body });
    return { grantId: out.grant_id, token: out.token, expiresAt: out.expires_at, model: out.model };
  }

  /**
   * The public id of `model` (an alias resolves) when owner `userId` may run agent turns on it.
   * Throws {@link GrantDispatchError}: 404 `model_not_found`, 403 (role below the model's
   * `required_role`), 400 (not a chat model), or no status when the gateway did not answer.
   */
  async checkModel(userId: number, model: string): Promise<{ model: string }> {
    const out = await this.http.call(modelCheck, { body: { user_id: userId, model } });
    return { model: out.model };
  }

  /** Extends a grant; `'gone'` when the gateway no longer renews it (unknown, revoked, expired). */
  async renew(grantId: string, ttlSeconds: number): Promise<{ expiresAt: string } | 'gone'> {
    try {
      const out = await this.http.call(grantRenew, { params: { grantId }, body: { ttl_seconds: ttlSeconds } });
      return { expiresAt: out.expires_at };
    } catch (err) {
      if (err instanceof GrantDispatchError && (err.status === 404 || err.status === 409)) return 'gone';
      throw err;
    }
  }

  /** Revokes a grant; idempotent, and an unknown grant counts as revoked. */
  async revoke(grantId: string): Promise<void> {
    try {
      await this.http.call(grantRevoke, { params: { grantId }, body: {} });
    } catch (err) {
      if (err instanceof GrantDispatchError && err.status === 404) return;
      throw err;
    }
  }
}
