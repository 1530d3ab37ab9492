/**
 * The gateway's grant dispatch API, called by the control plane with `GATEWAY_GRANT_DISPATCH_TOKEN`
 * (docs/agent-grants.md): issue, renew and revoke inference grants, and check that
 * an owner may run agent turns on a model. Served by gateway/agent-grants/dispatch-router.ts,
 * called by agent/grants/gateway-grant-client.ts through lib/http/internal-client.ts.
 */
import { z } from 'zod';
import { defineEndpoint } from './endpoint';

/** Longest lifetime a dispatcher may ask for, in seconds. */
export const MAX_GRANT_TTL_SECONDS = 3600;

/** Operation ids of `prompt_rewrite` grants start with this (`prompt-rewrite-<uuid>`). */
export const PROMPT_REWRITE_OPERATION_PREFIX = 'prompt-rewrite-';
/** The operation id of a chat's `title` grant is this followed by its job id (`title-<job_id>`). */
export const TITLE_OPERATION_PREFIX = 'title-';
/** The operation id of the `title` grant for a chat's pull-request title (docs/publisher.md "Title"): `pr-title-<job_id>`. */
export const PR_TITLE_OPERATION_PREFIX = 'pr-title-';

/** What a grant is for: a turn's residency, one prompt rewrite, or one chat's generated title (of the chat, or of its pull request). */
export const GRANT_KINDS = ['turn', 'prompt_rewrite', 'title'] as const;
export type GrantKind = (typeof GRANT_KINDS)[number];

const ID = z.string().min(1).max(200);
const MODEL = z.string().min(1).max(200);
const USER_ID = z.number().int().positive();
const TTL = z.number().int().min(10).max(MAX_GRANT_TTL_SECONDS);

/** `POST /internal/agent/grants` (201): a `turn` grant issued again for the same attempt rotates its token. */
export const grantIssue = defineEndpoint({
  name: 'grant issue',
  method: 'POST',
  route: '/internal/agent/grants',
  request: z.object({
    user_id: USER_ID,
    model: MODEL,
    kind: z.enum(GRANT_KINDS),
    job_id: ID.optional(),
    attempt_id: ID.optional(),
    host_id: ID.optional(),
    group_id: ID.nullable().optional(),
    generation: z.number().int().nonnegative().nullable().optional(),
    operation_id: ID.optional(),
    ttl_seconds: TTL.optional(),
  }).strict().superRefine((b, ctx) => {
    if (b.kind === 'turn') {
      for (const field of ['job_id', 'attempt_id'] as const) {
        if (b[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `is required for kind 'turn'` });
      }
    } else if (b.kind === 'title') {
      if (b.job_id === undefined) ctx.addIssue({ code: 'custom', path: ['job_id'], message: `is required for kind 'title'` });
      else if (b.operation_id !== `${TITLE_OPERATION_PREFIX}${b.job_id}` && b.operation_id !== `${PR_TITLE_OPERATION_PREFIX}${b.job_id}`) {
        ctx.addIssue({ code: 'custom', path: ['operation_id'], message: `must be '${TITLE_OPERATION_PREFIX}<job_id>' or '${PR_TITLE_OPERATION_PREFIX}<job_id>' for kind 'title'` });
      }
    } else if (!b.operation_id?.startsWith(PROMPT_REWRITE_OPERATION_PREFIX)) {
      ctx.addIssue({ code: 'custom', path: ['operation_id'], message: `must start with '${PROMPT_REWRITE_OPERATION_PREFIX}' for kind 'prompt_rewrite'` });
    }
  }),
  response: z.object({
    grant_id: z.string(),
    /** The `agr_…` token: handed to its user only; never logged or persisted by the caller. */
    token: z.string(),
    expires_at: z.string(),
    /** The granted public model id (an alias resolved). */
    model: z.string(),
  }),
});

/**
 * `POST /internal/agent/models/check`: the public id of `model` when owner `user_id` may run agent
 * turns on it; else 404 `model_not_found`, 403 (role below the model's `required_role`), 400 (not a
 * chat model), 409 (owner suspended or unknown).
 */
export const modelCheck = defineEndpoint({
  name: 'model check',
  method: 'POST',
  route: '/internal/agent/models/check',
  request: z.object({ user_id: USER_ID, model: MODEL }).strict(),
  response: z.object({ model: z.string() }),
});

/** `POST /internal/agent/grants/:grantId/renew`: 404 or 409 when the grant is no longer renewed. */
export const grantRenew = defineEndpoint({
  name: 'grant renew',
  method: 'POST',
  route: '/internal/agent/grants/:grantId/renew',
  request: z.object({ ttl_seconds: TTL.optional() }).strict(),
  response: z.object({ grant_id: z.string(), expires_at: z.string() }),
});

/** `POST /internal/agent/grants/:grantId/revoke`: idempotent; the body is not read. */
export const grantRevoke = defineEndpoint({
  name: 'grant revoke',
  method: 'POST',
  route: '/internal/agent/grants/:grantId/revoke',
  request: z.object({}),
  response: z.object({ grant_id: z.string(), revoked: z.literal(true) }),
});

/** Every endpoint of the grant dispatch API. */
export const grantDispatchEndpoints = [grantIssue, modelCheck, grantRenew, grantRevoke] as const;

/** An issue request as the gateway receives it after validation. */
export type ValidIssueRequest = z.output<typeof grantIssue.request>;
