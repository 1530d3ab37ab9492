/**
 * Alert settings (docs/alerts.md): `GET /admin/alerts` shows the rules in force (and where they
 * came from), the snooze, the mutes, the open incidents and the delivery counters;
 * `PUT /admin/alerts/snooze` snoozes every alert (`{"duration_seconds": n}` up to 7 days, or
 * `{"until": "<ISO time>"}` within 7 days), `DELETE` ends it; `PUT /admin/alerts/mutes/{type}`
 * mutes one type (`{"duration": "1h" | "1d" | "1w" | "until_unmuted"}`), `DELETE` unmutes it.
 * Each answer is the same view as the GET. Stored as runtime settings: every gateway process
 * applies a change at its next settings sync (at most 5 s).
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../../lib/errors';
import { createRouter } from '../../../lib/http/route-access';
import { documentRoute } from '../../../lib/http/route-docs';
import type { GatewayDeps } from '../../deps';
import { MAX_SNOOZE_SECONDS, MUTE_DURATIONS, type MuteDuration } from './controls';
import { ALERT_TYPES, isAlertType, type AlertType } from './types';
import type { GatewayState } from '../../surfaces/state';
import { adminBody, adminRoute, invalid } from '../../admin/http';

const snoozeBody = z.strictObject({
  duration_seconds: z.number().int().positive().max(MAX_SNOOZE_SECONDS, `at most ${MAX_SNOOZE_SECONDS} (7 days)`).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
});

const muteBody = z.strictObject({
  duration: z.enum(Object.keys(MUTE_DURATIONS) as [MuteDuration, ...MuteDuration[]]),
});

/** The snooze length in seconds from a validated body, or 400. */
function snoozeSeconds(body: z.infer<typeof snoozeBody>, now: number): number {
  if ((body.duration_seconds === undefined) === (body.until === undefined)) {
    throw new AppError('invalid_request', "Invalid request body: give exactly one of 'duration_seconds' or 'until'");
  }
  if (body.duration_seconds !== undefined) return body.duration_seconds;
  const seconds = Math.ceil((Date.parse(body.until!) - now) / 1000);
  if (seconds <= 0) throw invalid('until', 'must be in the future');
  if (seconds > MAX_SNOOZE_SECONDS) throw invalid('until', 'at most 7 days ahead');
  return seconds;
}

function alertTypeOr400(value: string): AlertType {
  if (!isAlertType(value)) throw new AppError('invalid_request', `Invalid path parameter 'type': unknown alert type '${value}'; known: ${ALERT_TYPES.join(', ')}`, { param: 'type' });
  return value;
}

/** What `GET /admin/alerts` and every change answer. */
export function alertsView(deps: GatewayDeps): Record<string, unknown> {
  const { config, controls, engine } = deps.alerts;
  const rules = Object.fromEntries(ALERT_TYPES.map((t) => {
    const r = config.rules[t];
    return [t, { enabled: r.enabled, threshold: r.threshold, window_seconds: r.window, cooldown_seconds: r.cooldown }];
  }));
  const runtime = engine?.view();
  return {
    enabled: engine !== undefined,
    webhook: runtime?.delivery.webhook ?? null,
    config: { status: config.status, path: config.path, source: config.source, ...(config.problem ? { problem: config.problem } : {}) },
    rules,
    ...controls.view(),
    incidents: runtime?.incidents ?? [],
    delivery: runtime ? { queued: runtime.delivery.queued, delivered: runtime.delivery.delivered, dropped: runtime.delivery.dropped } : null,
  };
}

export function alertsAdminRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/admin' });
  const admin = adminRoute(deps);
  const { controls } = deps.alerts;

  router.get('/alerts', admin, (ctx) => {
    ctx.body = alertsView(deps);
  });

  router.put('/alerts/snooze', admin, async (ctx) => {
    const seconds = snoozeSeconds(await adminBody(ctx, snoozeBody), Date.now());
    await controls.snooze(seconds);
    ctx.state.log.info({ event: 'alerts_snoozed', seconds }, 'alerts snoozed');
    ctx.body = alertsView(deps);
  });

  router.delete('/alerts/snooze', admin, async (ctx) => {
    await controls.endSnooze();
    ctx.state.log.info({ event: 'alerts_snooze_ended' }, 'alert snooze ended');
    ctx.body = alertsView(deps);
  });

  router.put('/alerts/mutes/:type', admin, async (ctx) => {
    const type = alertTypeOr400(ctx.params.type!);
    const { duration } = await adminBody(ctx, muteBody);
    await controls.mute(type, duration);
    ctx.state.log.info({ event: 'alert_type_muted', type, duration }, `alert type ${type} muted`);
    ctx.body = alertsView(deps);
  });

  router.delete('/alerts/mutes/:type', admin, async (ctx) => {
    const type = alertTypeOr400(ctx.params.type!);
    await controls.unmute(type);
    ctx.state.log.info({ event: 'alert_type_unmuted', type }, `alert type ${type} unmuted`);
    ctx.body = alertsView(deps);
  });

  documentRoute(router, 'GET', '/alerts', { summary: 'The alert rules in force, the snooze, the mutes and open incidents (docs/alerts.md).' });
  documentRoute(router, 'PUT', '/alerts/snooze', { body: snoozeBody, summary: 'Snoozes every alert for up to 7 days.' });
  documentRoute(router, 'DELETE', '/alerts/snooze', { noBody: true, summary: 'Ends the snooze.' });
  documentRoute(router, 'PUT', '/alerts/mutes/:type', { body: muteBody, summary: 'Mutes one alert type for 1 hour, 1 day, 1 week or until unmuted.' });
  documentRoute(router, 'DELETE', '/alerts/mutes/:type', { noBody: true, summary: 'Unmutes one alert type.' });
  return router;
}
