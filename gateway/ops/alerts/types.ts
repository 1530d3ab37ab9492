/**
 * The alert types the engine knows (docs/alerts.md) and the shape of one type's rule.
 */

/** Every alert type, in the order the console and `GET /admin/alerts` list them. */
export const ALERT_TYPES = ['auth_failure_spike', 'auth_ip_blocked', 'circuit_open'] as const;

export type AlertType = (typeof ALERT_TYPES)[number];

export function isAlertType(value: string): value is AlertType {
  return (ALERT_TYPES as readonly string[]).includes(value);
}

/** One type's rule, as the alerts file sets it (times in seconds). */
export interface AlertRule {
  enabled: boolean;
  /** Events within `window` that open an incident. */
  threshold: number;
  /** Seconds of history the threshold counts. */
  window: number;
  /** Seconds the incident's condition must stay clear (no new event) before it recovers. */
  cooldown: number;
}

export type AlertRules = Record<AlertType, AlertRule>;

/** How cards are delivered to the webhook. */
export interface DeliveryConfig {
  /** Seconds one POST may take before it counts as failed. */
  timeout: number;
  /** Seconds a card keeps being retried after it was queued; then it is dropped (logged). */
  retryWindow: number;
  /** Cards waiting at most; the oldest is dropped (logged with a count) when full. */
  queueLimit: number;
}

/** Built-in thresholds: what applies without an alerts file, and under every key a file leaves out. */
export const BUILT_IN_RULES: AlertRules = {
  auth_failure_spike: { enabled: false, threshold: 50, window: 300, cooldown: 900 },
  auth_ip_blocked: { enabled: true, threshold: 1, window: 300, cooldown: 3600 },
  circuit_open: { enabled: true, threshold: 1, window: 300, cooldown: 300 },
};

export const BUILT_IN_DELIVERY: DeliveryConfig = { timeout: 5, retryWindow: 3600, queueLimit: 100 };
