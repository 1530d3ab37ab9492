/**
 * Offload on the chat path (docs/routing.md "Offload"): the try order of a request
 * whose model has a policy in force, and the waits around its local attempts — queue wait
 * (engine queue or outbound permit) and engine wait (streams: first chunk) — that end in
 * {@link OffloadNow} for the fallback driver.
 */
import { ClientAbort } from '../../lib/http/client-abort';
import type { ChatCompletion } from '../processors/types';
import type { Model, Route } from '../registry';
import { mayOffload, OffloadNow, offloadStatus, OffloadRun, routerOf } from '../routing/offload';
import { estimatePromptTokens } from '../routing/prompt-estimate';
import type { RoutingTicket } from '../routing/selector';
import { isPermitTimeout, type Admission, type UpstreamStream } from '../upstream/client';
import type { ChatRequest } from './chat-request';
import type { GatewayContextDeps, GatewayState } from './state';

/** Opens a stream on one route with the given signal and admission (the chat path's opener). */
export type StreamOpener = (signal: ClientAbort, admission: Admission | undefined) => Promise<UpstreamStream>;

/**
 * The offload state of a request whose model has a policy in force, and its try order:
 * the local routes (the offload route taken out of rotation), then the offload route unless the
 * prompt is estimated above `max_input_tokens`. Undefined: the policy is not in force.
 */
export function offloadPlan(deps: GatewayContextDeps, model: Model, ticket: RoutingTicket, request: ChatRequest, promptTokens: number, state: GatewayState): { routes: Route[]; run: OffloadRun } | undefined {
  const policy = deps.offload.policyFor(model.id);
  if (!policy) return undefined;
  const status = offloadStatus(model, policy, routerOf(model, deps.routewise));
  if (!status.active) return undefined;
  const tokens = policy.max_input_tokens === undefined ? 0 : promptTokens || estimatePromptTokens(request.messages);
  const eligible = mayOffload(policy, tokens);
  const offloadEndpoint = status.route.endpointId;
  const run = new OffloadRun(model.id, status.route, policy, request.stream, eligible, state.log, () => !deps.routing.breakers.isOpen(offloadEndpoint));
  ticket.unpinned = status.route.endpointId;
  const routes = ticket.routes.filter((r) => r.routeId !== policy.route_id);
  if (eligible) routes.push(status.route);
  return { routes, run };
}

/** The offload waits of one local attempt. */
interface AttemptWaits {
  /** Engine wait: longest wait for the first chunk once the request is sent (streams). */
  engineMs: number | undefined;
  /** Whether the offload route can take the request when the engine wait expires (else the local attempt carries on). */
  canOffload: () => boolean;
  /** Queue wait on the outbound concurrency permit (policies without `engine_queue_limit`). */
  permitMs: number | undefined;
}

/**
 * Opens a stream (`open`) under the offload waits: when no first chunk arrived within the engine
 * wait (counted from the moment the request is sent), only this upstream request is aborted (an
 * attempt-scoped signal the client's abort also reaches) and the attempt throws
 * {@link OffloadNow}; so does a permit wait that expired.
 */
async function openStreamWaiting(open: StreamOpener, signal: ClientAbort, waits: AttemptWaits): Promise<UpstreamStream> {
  const attempt = new ClientAbort();
  const forward = () => attempt.abort(signal.reason);
  signal.once('abort', forward);
  let expired = false;
  let timer: NodeJS.Timeout | undefined;
  const { engineMs, permitMs, canOffload } = waits;
  const admission: Admission = {
    ...(permitMs !== undefined ? { acquireTimeoutMs: permitMs } : {}),
    admitted: () => {
      if (engineMs === undefined) return;
      timer = setTimeout(() => {
        if (!canOffload()) return;
        expired = true;
        attempt.abort(new Error('offload engine wait expired'));
      }, engineMs);
    },
  };
  try {
    return await open(attempt, admission);
  } catch (err) {
    signal.off('abort', forward);
    if (expired && !signal.aborted) throw new OffloadNow('first_byte_wait_expired');
    if (permitMs !== undefined && isPermitTimeout(err)) throw new OffloadNow('queue_wait_expired');
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Queue wait: with `engine_queue_limit`, a request to a local engine whose queue is
 * full waits up to `wait_seconds` for room, then throws {@link OffloadNow}. A stream holds a
 * place from admission to its first chunk; returns whether this request holds one.
 */
async function enterEngineQueue(deps: GatewayContextDeps, run: OffloadRun, route: Route, signal: ClientAbort): Promise<boolean> {
  const limit = run.policy.engine_queue_limit;
  if (limit === undefined) return false;
  // Once the request may no longer be offloaded it does not wait; a stream still takes its place.
  const admitted = await deps.offload.queues.enter(route.endpointId, { stream: run.stream, limit: run.queueWaits ? limit : undefined, waitMs: run.policy.wait_seconds * 1000, signal });
  if (!admitted) throw new OffloadNow('queue_wait_expired');
  return run.stream;
}

/** A stream to a local route of a model whose offload policy is in force: queue wait, then engine wait. */
export async function localStream(deps: GatewayContextDeps, run: OffloadRun, route: Route, signal: ClientAbort, open: StreamOpener): Promise<UpstreamStream> {
  const holds = await enterEngineQueue(deps, run, route, signal);
  try {
    return await openStreamWaiting(open, signal, { engineMs: run.engineWaitMs, permitMs: run.permitWaitMs, canOffload: () => run.canOffloadNow });
  } finally {
    if (holds) deps.offload.queues.leave(route.endpointId, run.policy.engine_queue_limit);
  }
}

/** A non-streaming call to a local route of a model whose offload policy is in force: queue wait (engine queue or permit). */
export async function localCompletion(deps: GatewayContextDeps, run: OffloadRun, route: Route, body: string, signal: ClientAbort, surface: 'chat' | 'responses' = 'chat'): Promise<ChatCompletion> {
  await enterEngineQueue(deps, run, route, signal);
  const permitMs = run.permitWaitMs;
  try {
    return await deps.upstream.postJson<ChatCompletion>(route, surface, body, signal, permitMs === undefined ? undefined : { acquireTimeoutMs: permitMs });
  } catch (err) {
    if (permitMs !== undefined && isPermitTimeout(err)) throw new OffloadNow('queue_wait_expired');
    throw err;
  }
}
