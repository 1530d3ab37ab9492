/**
 * The admin playground (docs/inference-surfaces.md "Playground"): `POST /admin/playground/chat`
 * sends a chat-completions body through the chat path itself ({@link serveChat}: the model's
 * routes, order, breakers, offload, modalities and fallback as for any client, or one pinned
 * route with no fallback) and answers the completion together with the routing attribution that
 * clients never see: which provider and endpoint answered, whether it fell back, the failed
 * attempts, the offload. The call is logged as one `api_logs` row whose `surface` is `playground`.
 */
import { performance } from 'node:perf_hooks';
import type Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { sendError, toAppError } from '../../lib/http/error-middleware';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { Caller } from '../auth/caller';
import type { GatewayDeps } from '../deps';
import { serveChat, type SurfaceShape } from '../surfaces/chat';
import { FORWARDED_TEXT, parseChatRequest } from '../surfaces/chat-request';
import { RequestRecord } from '../surfaces/request-record';
import type { GatewayState, InferenceContext } from '../surfaces/state';
import type { FailedAttempt } from '../upstream/upstream-error';
import type { AdminPrincipal } from './guard';
import { adminRoute } from './http';

export const PLAYGROUND_PATH = '/admin/playground/chat';
/** The `api_logs.surface` of a playground call. */
export const PLAYGROUND_SURFACE = 'playground';

const pinSchema = z.union([
  z.object({ endpoint_id: z.string().min(1).max(200) }).strict(),
  z.object({ provider: z.string().min(1).max(200) }).strict(),
], { error: 'must be {"endpoint_id": "<id>"} or {"provider": "<label>"}' });

/** The documented body: a chat-completions request (not streamed) and an optional pin. */
const playgroundBody = z.object({
  model: z.string().min(1),
  messages: z.array(z.record(z.string(), z.unknown())).min(1),
  stream: z.literal(false).optional(),
  pin: pinSchema.optional(),
}).loose();

type Pin = z.infer<typeof pinSchema>;

/** The inference context of a playground call: the admin's request, its record, the pin as `X-Route-Pin`. */
class PlaygroundContext implements InferenceContext {
  constructor(readonly req: InferenceContext['req'], readonly res: InferenceContext['res'], readonly state: RequestRecord, private readonly pin: string | undefined) {}
  header(name: string): string | undefined {
    if (name === 'x-route-pin') return this.pin;
    const value = this.req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value || undefined;
  }
}

/** The caller a playground call runs as: an administrator, its account when it signed in (quota, log). */
function adminCaller(admin: AdminPrincipal | undefined): Caller {
  return admin?.userId === undefined ? { role: 'admin', via: 'admin' } : { role: 'admin', via: 'admin', userId: admin.userId };
}

/** What the playground shows of the routing: the answering route (if any), fallback and failed attempts. */
function routingView(record: RequestRecord, pin: Pin | undefined, failed: readonly FailedAttempt[]): Record<string, unknown> {
  const routing = record.routing;
  const attempts = routing?.failed_attempts ?? failed;
  return {
    model: record.model ?? null,
    provider: routing?.provider ?? null,
    endpoint_id: routing?.endpoint_id ?? null,
    base_url: routing?.base_url ?? null,
    pinned: pin ?? null,
    fallback: routing?.fallback === true,
    failed_attempts: attempts.map((a) => ({
      endpoint_id: a.endpoint_id, provider: a.provider, status: a.status, ...(a.upstream_status === undefined ? {} : { upstream_status: a.upstream_status }), error_class: a.failure, message: a.message,
    })),
    offload: routing?.offload ?? null,
  };
}

/** Reads and checks the body: 400 naming the field, nothing sent upstream. */
async function readPlayground(deps: GatewayDeps, ctx: { req: InferenceContext['req'] }): Promise<{ chat: Record<string, unknown>; pin: Pin | undefined }> {
  const raw = await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT);
  const body = validateBody(playgroundBody, raw ?? {}) as Record<string, unknown> & { pin?: Pin };
  const { pin, ...chat } = body;
  return { chat, pin };
}

/** Serves one playground call on the admin's raw response; the record becomes one `api_logs` row. */
async function runPlayground(deps: GatewayDeps, ctx: { req: InferenceContext['req']; res: InferenceContext['res']; state: GatewayState }, chat: Record<string, unknown>, pin: Pin | undefined): Promise<void> {
  const record = new RequestRecord(ctx.state.requestId, deps.log, PLAYGROUND_PATH, ctx.state.client, performance.now());
  record.surface = PLAYGROUND_SURFACE;
  record.caller = adminCaller(ctx.state.admin);
  let failed: readonly FailedAttempt[] = [];
  const shape: SurfaceShape = {
    completion: (completion) => ({ completion, routing: routingView(record, pin, []) }),
    stream: () => { throw new AppError('internal', 'the playground does not stream'); },
    failed: (attempts) => { failed = attempts; },
  };
  try {
    const pinned = pin === undefined ? undefined : 'endpoint_id' in pin ? pin.endpoint_id : pin.provider;
    await serveChat(new PlaygroundContext(ctx.req, ctx.res, record, pinned), deps, parseChatRequest(chat), 'admin', shape);
  } catch (thrown) {
    const err = toAppError(thrown);
    record.errorCode = err.code;
    const pinError = err.param === 'X-Route-Pin' ? new AppError(err.code, err.message, { param: 'pin' }) : thrown;
    sendError(pinError, ctx.res, record.log, (_status, body) => ({ ...body, routing: routingView(record, pin, failed) }));
  } finally {
    record.end(ctx.req, ctx.res);
    if (record.usage !== undefined) deps.limits.charge(record.caller.userId, record);
    deps.requestLog?.finish(record);
  }
}

export function playgroundRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  router.post(PLAYGROUND_PATH, adminRoute(deps), async (ctx) => {
    const { chat, pin } = await readPlayground(deps, ctx);
    // From here the chat path writes the response itself (as on /v1/chat/completions).
    ctx.respond = false;
    await runPlayground(deps, ctx, chat, pin);
  });
  documentRoute(router, 'POST', PLAYGROUND_PATH, {
    body: playgroundBody,
    statuses: [429, 502, 503, 504],
    summary: 'Sends a chat request through the chat path (or one pinned route) and answers the completion with its routing attribution (provider, endpoint, fallback, failed attempts, offload).',
  });
  return router;
}
