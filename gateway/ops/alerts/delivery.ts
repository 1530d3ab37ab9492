/**
 * Posts alert cards to the chat webhook, one at a time and in the order they were queued (so an
 * incident's recovery never overtakes its opening card). A card that fails with a network error,
 * a timeout (`delivery.timeout`, 5 s by default), a 5xx or a 429 is retried with exponential
 * backoff (1 s doubling to 60 s, plus up to 25 % jitter; a `Retry-After` is honoured) until
 * `delivery.retry_window` (an hour by default) has passed since it was queued; then it is dropped
 * and logged. Other 4xx answers are permanent (a revoked webhook) and drop the card at once. The
 * queue is bounded: when full, the oldest card is dropped and the drops are counted in the log.
 *
 * The webhook URL is a secret (its path is the credential): it never appears in a log line, only
 * the name of the variable it came from.
 */
import type { Logger } from '../../../lib/logger';
import type { Card } from './cards';
import type { DeliveryConfig } from './types';

export interface DeliveryOptions {
  url: string;
  /** The variable the URL came from, the only name logs use for it. */
  urlVariable: string;
  config: DeliveryConfig;
  log: Logger;
  now?: () => number;
  random?: () => number;
}

interface Queued {
  card: Card;
  incidentId: string;
  queuedAt: number;
  attempts: number;
}

type Outcome = { ok: true } | { ok: false; retry: boolean; why: string; retryAfterMs?: number };

const BASE_DELAY_MS = 1000;
const MAX_DELAY_MS = 60_000;

/** Milliseconds a `Retry-After` value asks for (seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait before retry number `attempt` (1-based): exponential, capped, with up to 25 % jitter. */
export function backoffMs(attempt: number, random: () => number): number {
  const base = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
  return base + Math.floor(base * 0.25 * random());
}

export class WebhookDelivery {
  private readonly queue: Queued[] = [];
  private readonly now: () => number;
  private readonly random: () => number;
  private pumping = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: AbortController | undefined;
  /** The card being posted or waiting for its retry (the queue's head while the pump runs). */
  private inFlightCard: Queued | undefined;
  delivered = 0;
  dropped = 0;

  constructor(private readonly options: DeliveryOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Queues a card; never waits. When full, drops the oldest card that is not being posted right now. */
  enqueue(card: Card, incidentId: string): void {
    if (this.stopped) return;
    this.queue.push({ card, incidentId, queuedAt: this.now(), attempts: 0 });
    if (this.queue.length > this.options.config.queueLimit) {
      const [oldest] = this.queue.splice(this.queue[0] === this.inFlightCard ? 1 : 0, 1);
      this.dropped += 1;
      this.options.log.warn({ event: 'alert_card_dropped', reason: 'queue_full', incident: oldest!.incidentId, dropped_total: this.dropped, webhook: this.options.urlVariable }, `alert queue full (${this.options.config.queueLimit}): dropped the oldest waiting card; ${this.dropped} dropped so far`);
    }
    void this.pump();
  }

  /** Stops retrying and aborts a post in flight; queued cards are discarded. */
  stop(): void {
    this.stopped = true;
    this.inFlight?.abort();
    clearTimeout(this.timer);
    this.wake?.();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.stopped && this.queue.length > 0) await this.deliverHead();
    } finally {
      this.pumping = false;
    }
  }

  private async deliverHead(): Promise<void> {
    const head = this.queue[0]!;
    const { log, urlVariable, config } = this.options;
    head.attempts += 1;
    this.inFlightCard = head;
    const outcome = await this.post(head.card);
    if (this.stopped) return;
    if (outcome.ok) {
      this.inFlightCard = undefined;
      this.queue.shift();
      this.delivered += 1;
      log.info({ event: 'alert_card_delivered', incident: head.incidentId, attempts: head.attempts, webhook: urlVariable }, 'alert card delivered');
      return;
    }
    const waitMs = Math.max(backoffMs(head.attempts, this.random), outcome.retryAfterMs ?? 0);
    const deadline = head.queuedAt + config.retryWindow * 1000;
    if (!outcome.retry || this.now() + waitMs > deadline) {
      this.inFlightCard = undefined;
      this.queue.shift();
      this.dropped += 1;
      const reason = outcome.retry ? 'retry_window_passed' : 'refused';
      log.error({ event: 'alert_card_dropped', reason, why: outcome.why, incident: head.incidentId, attempts: head.attempts, dropped_total: this.dropped, webhook: urlVariable }, `alert card dropped (${reason}: ${outcome.why})`);
      return;
    }
    log.warn({ event: 'alert_card_retry', why: outcome.why, incident: head.incidentId, attempts: head.attempts, retry_in_ms: waitMs, webhook: urlVariable }, `alert card not delivered (${outcome.why}); retrying`);
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, waitMs);
      this.timer.unref();
    });
    this.wake = undefined;
  }

  private async post(card: Card): Promise<Outcome> {
    const controller = new AbortController();
    this.inFlight = controller;
    const timeout = setTimeout(() => controller.abort(), this.options.config.timeout * 1000);
    try {
      const res = await fetch(this.options.url, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(card), signal: controller.signal, redirect: 'manual',
      });
      await res.arrayBuffer();
      if (res.status >= 200 && res.status < 300) return { ok: true };
      const retry = res.status === 429 || res.status >= 500;
      const after = retryAfterMs(res.headers.get('retry-after'), this.now());
      return { ok: false, retry, why: `HTTP ${res.status}`, ...(after !== undefined ? { retryAfterMs: after } : {}) };
    } catch (err) {
      // Only the error's code: a message could carry the URL.
      const code = (err as { cause?: { code?: unknown } }).cause?.code;
      const why = controller.signal.aborted ? 'timeout' : typeof code === 'string' ? code : 'network error';
      return { ok: false, retry: true, why };
    } finally {
      clearTimeout(timeout);
      this.inFlight = undefined;
    }
  }
}
