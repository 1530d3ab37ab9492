/**
 * The in-process alert engine (on with `ALERTS_ENABLED=true`; docs/alerts.md). The auth gate and
 * the circuit breakers push events through the gate's `AuthAlerts` port and the breaker listener: each push
 * is O(1) and allocation-free (a counter and a slot of a preallocated ring). Everything else
 * happens on the engine's own timer, off the request path: draining the ring, aggregating
 * incidents, asking the snooze and mutes, formatting cards and queueing them for the webhook,
 * whose slowness or failure therefore never reaches a request.
 */
import type { Logger } from '../../../lib/logger';
import type { CircuitEvent, CircuitListener } from '../../routing/breaker';
import type { AlertsConfig } from './alerts-file';
import { openingCard, recoveryCard, type EndpointDescriber } from './cards';
import type { AlertControls } from './controls';
import { WebhookDelivery } from './delivery';
import { EventKind, EventRing } from './event-ring';
import { IncidentTracker, type Incident, type Transition } from './incidents';
import type { AuthAlerts } from '../../auth/gate';

export interface AlertEngineOptions {
  config: AlertsConfig;
  /** The webhook and the variable it came from; undefined: incidents are tracked but nothing is posted (logged at start). */
  webhook: { url: string; variable: string } | undefined;
  controls: AlertControls;
  log: Logger;
  describeEndpoint: EndpointDescriber;
  now?: () => number;
  /** How often the timer drains and evaluates; default 1 s. */
  tickMs?: number;
  ringCapacity?: number;
}

/** An open incident as `GET /admin/alerts` shows it. */
export interface IncidentView {
  id: string;
  type: Incident['type'];
  opened_at: string;
  events: number;
  partial: boolean;
  suppressed: Incident['suppressed'];
}

export class AlertEngine implements AuthAlerts {
  private readonly ring: EventRing;
  private readonly tracker: IncidentTracker;
  private readonly delivery: WebhookDelivery | undefined;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  /** Every auth failure pushed (exact even when the ring overwrites). */
  private authFailures = 0;
  private authFailuresDrained = 0;

  constructor(private readonly options: AlertEngineOptions) {
    this.now = options.now ?? Date.now;
    this.ring = new EventRing(options.ringCapacity ?? 4096);
    this.tracker = new IncidentTracker(options.config.rules);
    this.delivery = options.webhook
      ? new WebhookDelivery({ url: options.webhook.url, urlVariable: options.webhook.variable, config: options.config.delivery, log: options.log, now: this.now })
      : undefined;
  }

  get config(): AlertsConfig {
    return this.options.config;
  }

  authFailure(source: string, address: string, keyPrefix: string | undefined, reason: string, path: string): void {
    this.authFailures += 1;
    this.ring.push(EventKind.AuthFailure, this.now(), source, address, keyPrefix, reason, path);
  }

  ipBlocked(source: string, address: string): void {
    this.ring.push(EventKind.IpBlocked, this.now(), source, address);
  }

  /** The breaker listener: openings and closings (half-open is not an event here). */
  readonly circuitListener: CircuitListener = (event: CircuitEvent) => {
    if (event.type === 'circuit_open') this.ring.push(EventKind.CircuitOpen, this.now(), event.endpointId, undefined, undefined, event.reason);
    else if (event.type === 'circuit_closed') this.ring.push(EventKind.CircuitClosed, this.now(), event.endpointId);
  };

  start(): void {
    if (this.timer) return;
    const { log, config, webhook } = this.options;
    if (!webhook) log.warn({ event: 'alerts_no_webhook' }, 'ALERTS_ENABLED=true but neither SLACK_ALERTS_WEBHOOK_URL nor SLACK_WEBHOOK_URL is set: incidents are tracked, no card is posted');
    log.info({ event: 'alerts_started', rules: config.rules, config_status: config.status, webhook: webhook?.variable ?? null }, 'alert engine started');
    this.timer = setInterval(() => this.tick(), this.options.tickMs ?? 1000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.delivery?.stop();
  }

  /** Drains, aggregates and posts; runs on the timer (tests may call it). */
  tick(): void {
    const now = this.now();
    const { events } = this.ring.drain();
    let drainedFailures = 0;
    for (const e of events) if (e.kind === EventKind.AuthFailure) drainedFailures += 1;
    const lostFailures = this.authFailures - this.authFailuresDrained - drainedFailures;
    this.authFailuresDrained = this.authFailures;
    this.tracker.observe(events, Math.max(0, lostFailures), now);
    for (const transition of this.tracker.evaluate(now, (type) => this.options.controls.suppression(type))) this.post(transition, now);
  }

  private post({ kind, incident }: Transition, now: number): void {
    const { log, describeEndpoint, config } = this.options;
    const fields = { event: kind === 'opened' ? 'alert_incident_opened' : 'alert_incident_recovered', incident: incident.id, type: incident.type, events: incident.events, suppressed: incident.suppressed };
    if (incident.suppressed) {
      log.info(fields, `alert ${incident.type} ${kind} while ${incident.suppressed}: no card`);
      return;
    }
    log.info(fields, `alert ${incident.type} ${kind}`);
    const card = kind === 'opened' ? openingCard(incident, config.rules[incident.type], describeEndpoint) : recoveryCard(incident, now, describeEndpoint);
    this.delivery?.enqueue(card, incident.id);
  }

  /** Open incidents and delivery counters, for `GET /admin/alerts`. */
  view(): { incidents: IncidentView[]; delivery: { webhook: string | null; queued: number; delivered: number; dropped: number } } {
    return {
      incidents: this.tracker.openIncidents().map((i) => ({ id: i.id, type: i.type, opened_at: new Date(i.openedAt).toISOString(), events: i.events, partial: i.partial, suppressed: i.suppressed })),
      delivery: { webhook: this.options.webhook?.variable ?? null, queued: this.delivery?.queued ?? 0, delivered: this.delivery?.delivered ?? 0, dropped: this.delivery?.dropped ?? 0 },
    };
  }
}
