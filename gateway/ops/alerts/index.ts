/**
 * The alerts put together for a gateway: the alerts file, the snooze and mutes, and (only with
 * `ALERTS_ENABLED=true`) the engine wired to the auth gate and the circuit breakers.
 * docs/alerts.md describes the behaviour.
 */
import type { Logger } from '../../../lib/logger';
import type { Settings } from '../../../lib/settings';
import type { AuthGate } from '../../auth/gate';
import type { RegistryHolder } from '../../registry/holder';
import type { DistributionState } from '../../registry/manifest';
import type { Env } from '../../routing-file/expand';
import type { CircuitBreakers } from '../../routing/breaker';
import type { SiteSettings } from '../../store/site-settings';
import { loadAlertsConfig, type AlertsConfig } from './alerts-file';
import { AlertControls } from './controls';
import { AlertEngine } from './engine';

export interface Alerts {
  config: AlertsConfig;
  controls: AlertControls;
  /** Present only with `ALERTS_ENABLED=true`. */
  engine: AlertEngine | undefined;
  start(): void;
  stop(): void;
}

/** `model m via route-a (ep_…)`: what an endpoint serves, from the current registry. */
export function endpointDescriber(registry: RegistryHolder): (endpointId: string) => string {
  return (endpointId) => {
    const served: string[] = [];
    let provider: string | undefined;
    for (const model of registry.current.models) {
      for (const route of model.routes) {
        if (route.endpointId !== endpointId) continue;
        served.push(model.id);
        provider ??= route.providerLabel;
      }
    }
    return served.length === 0 ? endpointId : `${served.join(', ')} via ${provider} (${endpointId})`;
  };
}

export function createAlerts(options: {
  settings: Settings;
  env: Env;
  cwd: string;
  log: Logger;
  distribution: DistributionState;
  siteSettings: SiteSettings;
  registry: RegistryHolder;
  gate: AuthGate;
  breakers: CircuitBreakers;
  now?: () => number;
}): Alerts {
  const { settings, log } = options;
  const config = loadAlertsConfig({ pathEnv: settings, env: options.env, cwd: options.cwd, log, distribution: options.distribution });
  const controls = new AlertControls(options.siteSettings, options.now);
  let engine: AlertEngine | undefined;
  if (settings.ALERTS_ENABLED) {
    const webhook = settings.SLACK_ALERTS_WEBHOOK_URL
      ? { url: settings.SLACK_ALERTS_WEBHOOK_URL, variable: 'SLACK_ALERTS_WEBHOOK_URL' }
      : settings.SLACK_WEBHOOK_URL ? { url: settings.SLACK_WEBHOOK_URL, variable: 'SLACK_WEBHOOK_URL' } : undefined;
    engine = new AlertEngine({ config, webhook, controls, log, describeEndpoint: endpointDescriber(options.registry), ...(options.now ? { now: options.now } : {}) });
    options.gate.alerts = engine;
    options.breakers.onChange(engine.circuitListener);
  }
  return {
    config, controls, engine,
    start: () => engine?.start(),
    stop: () => engine?.stop(),
  };
}
