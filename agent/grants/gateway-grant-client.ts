/**
 * The control plane's client of the gateway's grant dispatch endpoints (spec 5.3, 5.8;
 * docs/agent-grants.md): issue, renew and revoke inference grants, and check that an owner may
 * run agent turns on a model, with `GATEWAY_GRANT_DISPATCH_TOKEN`. Every call has a timeout. Errors name the call and the
 * gateway's status and message, never the dispatch token or a grant token.
 */

export interface GrantIssueInput {
  userId: number;
  model: string;
  kind: 'turn' | 'prompt_rewrite' | 'title';
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

/** A dispatch call the gateway refused or that could not be made. */
export class GrantDispatchError extends Error {
  /** The gateway's error code (`model_not_found`, `forbidden`, …) when it answered with one. */
  readonly code: string | undefined;

  constructor(
    message: string,
    /** The gateway's HTTP status; undefined when no answer came (network error or timeout). */
    readonly status: number | undefined,
    /** Whether the call ran out of time. */
    readonly timedOut = false,
    options?: { cause?: unknown; code?: string | undefined },
  ) {
    super(message, options);
    this.code = options?.code;
    this.name = 'GrantDispatchError';
  }
}

export interface GatewayGrantClientOptions {
  gatewayUrl: string;
  dispatchToken: string;
  /** Per-call timeout; default 10 s. */
  timeoutMs?: number;
}

interface ErrorBody {
  error?: { message?: string; code?: string };
}

export class GatewayGrantClient {
  private readonly base: string;
  private readonly timeoutMs: number;

  constructor(private readonly opts: GatewayGrantClientOptions) {
    this.base = opts.gatewayUrl.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** Issues a grant (a `turn` grant issued again for the same attempt rotates its token). */
  async issue(input: GrantIssueInput): Promise<IssuedGatewayGrant> {
    const body = {
      user_id: input.userId, model: input.model, kind: input.kind,
      ...(input.jobId !== undefined ? { job_id: input.jobId } : {}),
      ...(input.attemptId !== undefined ? { attempt_id: input.attemptId } : {}),
      ...(input.hostId !== undefined ? { host_id: input.hostId } : {}),
      ...(input.groupId !== undefined ? { group_id: input.groupId } : {}),
      ...(input.generation !== undefined ? { generation: input.generation } : {}),
      ...(input.operationId !== undefined ? { operation_id: input.operationId } : {}),
      ...(input.ttlSeconds !== undefined ? { ttl_seconds: input.ttlSeconds } : {}),
    };
    const res = await this.call('issue', '/internal/agent/grants', body);
    const out = (await res.json()) as { grant_id: string; token: string; expires_at: string; model: string };
    return { grantId: out.grant_id, token: out.token, expiresAt: out.expires_at, model: out.model };
  }

  /**
   * The public id of `model` (an alias resolves) when owner `userId` may run agent turns on it.
   * Throws {@link GrantDispatchError}: 404 `model_not_found`, 403 (role below the model's
   * `required_role`), 400 (not a chat model), or no status when the gateway did not answer.
   */
  async checkModel(userId: number, model: string): Promise<{ model: string }> {
    const res = await this.call('model check', '/internal/agent/models/check', { user_id: userId, model });
    return { model: ((await res.json()) as { model: string }).model };
  }

  /** Extends a grant; `'gone'` when the gateway no longer renews it (unknown, revoked, expired). */
  async renew(grantId: string, ttlSeconds: number): Promise<{ expiresAt: string } | 'gone'> {
    try {
      const res = await this.call('renew', `/internal/agent/grants/${encodeURIComponent(grantId)}/renew`, { ttl_seconds: ttlSeconds });
      return { expiresAt: ((await res.json()) as { expires_at: string }).expires_at };
    } catch (err) {
      if (err instanceof GrantDispatchError && (err.status === 404 || err.status === 409)) return 'gone';
      throw err;
    }
  }

  /** Revokes a grant; idempotent, and an unknown grant counts as revoked. */
  async revoke(grantId: string): Promise<void> {
    try {
      await this.call('revoke', `/internal/agent/grants/${encodeURIComponent(grantId)}/revoke`, {});
    } catch (err) {
      if (err instanceof GrantDispatchError && err.status === 404) return;
      throw err;
    }
  }

  private async call(what: string, path: string, body: unknown): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.opts.dispatchToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as { name?: string }).name === 'TimeoutError';
      const reason = timedOut ? `no answer within ${this.timeoutMs} ms` : (err as Error).message;
      throw new GrantDispatchError(`Grant ${what} at the gateway failed: ${reason}`, undefined, timedOut, { cause: err });
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let message = text.slice(0, 300);
    let code: string | undefined;
    try {
      const error = (JSON.parse(text) as ErrorBody).error;
      message = error?.message ?? message;
      code = error?.code;
    } catch {
      // not JSON: keep the text
    }
    throw new GrantDispatchError(`Grant ${what} refused by the gateway (${res.status}): ${message}`, res.status, false, { code });
  }
}
