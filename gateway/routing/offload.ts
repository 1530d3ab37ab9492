/**
 * Offload (docs/routing.md "Offload"): a model on router `fixed` may name one of its routes (by
 * route id) as its offload route. That route is kept out of normal rotation and takes a request
 * only when
 *
 * - `engine_wait`: a streaming request's local route has not produced its first upstream chunk
 *   within `wait_seconds` (the local attempt is aborted, never the client);
 * - `queue_wait`: the local engine's queue (streaming requests admitted to it that have not yet
 *   returned a first token) is at `engine_queue_limit`, and no room appeared within `wait_seconds`;
 * - `last_resort`: every local route failed (retryably).
 *
 * A request is offloaded at most once; prompts estimated above `max_input_tokens` never are.
 * The decisions are pure functions here; {@link OffloadRun} carries one request's state for the
 * fallback driver, and {@link OffloadPolicies} compiles the stored policies once per stored
 * state so a model without a policy costs one map lookup.
 */
import type { Logger } from '../../lib/logger';
import type { Model, Route } from '../registry';
import type { OffloadPolicy } from '../runtime-config/types';

export type OffloadReason = 'queue_wait' | 'engine_wait' | 'last_resort';

/** `_routing.offload` (routing attribution): the reason flag, and the offload endpoint when it failed. */
export interface OffloadAttribution {
  queue_wait?: true;
  engine_wait?: true;
  last_resort?: true;
  /** The offload route's endpoint, set only when the offload attempt failed. */
  offload_endpoint_id?: string;
}

/** Whether a stored policy is applied to `model` now, and its offload route when it is. */
export type OffloadStatus = { active: true; route: Route } | { active: false; reason: string };

/** The model's effective strategy name (`routewise` when that strategy applies to it, named or by default). */
export function routerOf(model: Model, routewise: { applies(model: Model): boolean }): string {
  return routewise.applies(model) ? 'routewise' : model.router ?? 'fixed';
}

/** Whether the model declares `hybrid_composition: true` (offload is refused for it). */
export function isHybrid(model: Model): boolean {
  return model.routerParams.hybrid_composition === true || model.routes.some((r) => r.routeMetadata.hybrid_composition === true);
}

/**
 * Why an offload policy cannot apply to `model` (router `fixed` chat models that are not hybrid),
 * if it cannot. `router` is the model's effective strategy name.
 */
export function offloadRefusal(model: Model, router: string): string | undefined {
  if (router !== 'fixed') return `model ${model.id} uses the ${router} strategy; offload applies to router fixed only`;
  if (isHybrid(model)) return `model ${model.id} declares hybrid_composition: true; offload is refused for hybrid models`;
  if (model.modelType !== 'chat') return `model ${model.id} is an embedding model`;
  return undefined;
}

/** Pure: whether `policy` is in force for `model` (the effective model, or undefined when gone). */
export function offloadStatus(model: Model | undefined, policy: OffloadPolicy, router: string): OffloadStatus {
  if (!model) return { active: false, reason: 'model not found' };
  const route = model.routes.find((r) => r.routeId === policy.route_id);
  if (!route) return { active: false, reason: `offload route ${policy.route_id} no longer exists` };
  const refusal = offloadRefusal(model, router);
  if (refusal) return { active: false, reason: refusal };
  if (route.weight <= 0) return { active: false, reason: `offload route ${policy.route_id} has effective weight 0 (excluded by the runtime configuration)` };
  if (!model.routes.some((r) => r !== route && r.weight > 0)) return { active: false, reason: `model ${model.id} has no other route to offload from` };
  return { active: true, route };
}

/** Pure: whether a prompt of `promptTokens` (estimated) may be offloaded under `policy`. */
export function mayOffload(policy: Pick<OffloadPolicy, 'max_input_tokens'>, promptTokens: number): boolean {
  return policy.max_input_tokens === undefined || promptTokens <= policy.max_input_tokens;
}

/** What happened to the local attempt that may call for an offload. */
export type OffloadTrigger = 'first_byte_wait_expired' | 'queue_wait_expired' | 'local_routes_exhausted';

/**
 * Pure: the offload reason for `trigger`, or undefined when the request may not be offloaded
 * (already offloaded once, prompt above `max_input_tokens`, engine wait of a non-streaming request).
 */
export function offloadReason(trigger: OffloadTrigger, request: { stream: boolean; alreadyOffloaded: boolean; eligible: boolean }): OffloadReason | undefined {
  if (request.alreadyOffloaded || !request.eligible) return undefined;
  if (trigger === 'first_byte_wait_expired') return request.stream ? 'engine_wait' : undefined;
  if (trigger === 'queue_wait_expired') return 'queue_wait';
  return 'last_resort';
}

/**
 * Thrown by an attempt whose wait expired (engine or queue): the fallback driver abandons the
 * local attempt (no verdict on its endpoint) and tries the offload route next.
 */
export class OffloadNow extends Error {
  constructor(readonly trigger: Exclude<OffloadTrigger, 'local_routes_exhausted'>) {
    super(trigger === 'first_byte_wait_expired' ? 'no first token within the offload wait' : 'engine queue full for the offload wait');
    this.name = 'OffloadNow';
  }
}

/** One request's offload state, created only for models whose policy is in force. */
export class OffloadRun {
  /** Set once the request was offloaded (whatever the outcome). */
  attribution: OffloadAttribution | undefined;
  /** The reason an expired wait asked for (consumed when the offload route is tried). */
  private pending: OffloadReason | undefined;
  private from: Route | undefined;

  constructor(
    readonly modelId: string,
    readonly route: Route,
    readonly policy: OffloadPolicy,
    readonly stream: boolean,
    /** The prompt is at most `max_input_tokens` (or no limit). */
    readonly eligible: boolean,
    private readonly log: Logger,
    /** Whether the offload route can take a request now (its circuit is not open). */
    private readonly reachable: () => boolean = () => true,
  ) {}

  /**
   * Whether an expired wait should give up on the local engine now: the request may still be
   * offloaded and the offload route's circuit is not open (else the request keeps waiting locally).
   */
  get canOffloadNow(): boolean {
    return offloadReason('queue_wait_expired', this.facts()) !== undefined && this.reachable();
  }

  /** Milliseconds a local attempt may wait for its first chunk before offloading (undefined: no engine wait). */
  get engineWaitMs(): number | undefined {
    return offloadReason('first_byte_wait_expired', this.facts()) ? this.policy.wait_seconds * 1000 : undefined;
  }

  /** Whether the engine queue wait (`engine_queue_limit`) applies to a local attempt now (nowhere to go: no wait). */
  get queueWaits(): boolean {
    return this.policy.engine_queue_limit !== undefined && this.canOffloadNow;
  }

  /**
   * Without `engine_queue_limit`, the queue wait is the wait for an outbound concurrency permit
   * of the local route (hosts the limit applies to): up to `wait_seconds` instead of the acquire
   * timeout, then offload. Undefined: the ordinary permit wait.
   */
  get permitWaitMs(): number | undefined {
    if (this.policy.engine_queue_limit !== undefined) return undefined;
    return this.canOffloadNow ? this.policy.wait_seconds * 1000 : undefined;
  }

  private facts(): { stream: boolean; alreadyOffloaded: boolean; eligible: boolean } {
    return { stream: this.stream, alreadyOffloaded: this.attribution !== undefined || this.pending !== undefined, eligible: this.eligible };
  }

  /** An expired wait on `local`: the offload route goes next (false: no offload allowed). */
  request(trigger: OffloadNow['trigger'], local: Route): boolean {
    const reason = offloadReason(trigger, this.facts());
    if (!reason) return false;
    this.pending = reason;
    this.from = local;
    return true;
  }

  /** The offload route is about to be tried after `previous` (the last local route tried, if any). */
  begin(previous: Route | undefined): void {
    const reason = this.pending ?? 'last_resort';
    const from = this.from ?? previous;
    this.pending = undefined;
    this.attribution = { [reason]: true };
    this.log.info(
      { event: 'route_offload', model: this.modelId, reason, from_endpoint_id: from?.endpointId ?? null, to_endpoint_id: this.route.endpointId },
      `route_offload: ${this.modelId} ${reason} from ${from?.endpointId ?? 'none'} to ${this.route.endpointId}`,
    );
  }

  /** The offload attempt failed: recorded, and the remaining local routes carry on. */
  failed(): void {
    if (this.attribution) this.attribution.offload_endpoint_id = this.route.endpointId;
  }
}

interface QueueWaiter {
  /** The waiting request is a stream (it takes a place in the queue once admitted). */
  counts: boolean;
  admit: () => void;
}

class EngineQueue {
  pending = 0;
  readonly waiters: QueueWaiter[] = [];
}

/**
 * Per local engine (endpoint): streaming requests of offload-policy models admitted to it that
 * have not yet returned a first token (`engine_queue_limit`), and the requests waiting
 * for room. Per process, memory only.
 */
export class EngineQueues {
  private readonly queues = new Map<string, EngineQueue>();

  private queue(endpointId: string): EngineQueue {
    let queue = this.queues.get(endpointId);
    if (!queue) {
      queue = new EngineQueue();
      this.queues.set(endpointId, queue);
    }
    return queue;
  }

  /** Streams admitted to the endpoint and not yet past their first token. */
  pending(endpointId: string): number {
    return this.queues.get(endpointId)?.pending ?? 0;
  }

  /**
   * Admission to the engine's queue: at once when it has room (or `limit` is undefined), else
   * after waiting up to `waitMs` for room. Resolves true when admitted (a stream then holds a
   * place until {@link leave}), false when the wait expired; rejects when `signal` aborts.
   */
  enter(endpointId: string, options: { stream: boolean; limit: number | undefined; waitMs: number; signal: { aborted: boolean; reason?: Error | undefined; once(e: 'abort', f: () => void): unknown; off(e: 'abort', f: () => void): unknown } }): Promise<boolean> {
    const queue = this.queue(endpointId);
    const { limit } = options;
    if (limit === undefined || (queue.pending < limit && queue.waiters.length === 0)) {
      if (options.stream) queue.pending += 1;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        options.signal.off('abort', aborted);
        const index = queue.waiters.indexOf(waiter);
        if (index >= 0) queue.waiters.splice(index, 1);
      };
      const waiter: QueueWaiter = { counts: options.stream, admit: () => { done(); resolve(true); } };
      const aborted = () => {
        done();
        reject(options.signal.reason ?? new Error('client closed the connection'));
      };
      const timer = setTimeout(() => {
        done();
        resolve(false);
      }, options.waitMs);
      options.signal.once('abort', aborted);
      queue.waiters.push(waiter);
    });
  }

  /** A stream admitted by {@link enter} returned its first token (or ended): room for the next. */
  leave(endpointId: string, limit: number | undefined): void {
    const queue = this.queues.get(endpointId);
    if (!queue) return;
    queue.pending = Math.max(0, queue.pending - 1);
    while (queue.waiters.length > 0 && (limit === undefined || queue.pending < limit)) {
      const waiter = queue.waiters[0]!;
      if (waiter.counts) queue.pending += 1;
      waiter.admit();
    }
  }
}

/** The stored policies by model id, compiled once per stored state (memory only; hot-path safe). */
export class OffloadPolicies {
  /** The stored `site_settings` map (set by the assembly); its identity changes on every reload. */
  source: () => ReadonlyMap<string, unknown> = () => new Map();
  private compiledFrom: ReadonlyMap<string, unknown> | undefined;
  private byModel = new Map<string, OffloadPolicy>();
  /** The local engines' queues (`engine_queue_limit`). */
  readonly queues = new EngineQueues();

  constructor(private readonly prefix: string) {}

  /** The stored policy of a model, if any. */
  policyFor(modelId: string): OffloadPolicy | undefined {
    const settings = this.source();
    if (settings !== this.compiledFrom) this.compile(settings);
    return this.byModel.get(modelId);
  }

  private compile(settings: ReadonlyMap<string, unknown>): void {
    const byModel = new Map<string, OffloadPolicy>();
    for (const [key, value] of settings) if (key.startsWith(this.prefix)) byModel.set(key.slice(this.prefix.length), value as OffloadPolicy);
    this.byModel = byModel;
    this.compiledFrom = settings;
  }
}
