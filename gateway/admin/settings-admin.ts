/**
 * Runtime switches (stored in `site_settings`, overriding the environment; docs/identity.md
 * "Runtime switches"): `GET /admin/settings` shows each switch's stored value, environment default
 * and effective value; `PATCH /admin/settings` sets switches (`null` removes the override).
 * Reopening sign-up while the active manifest disables it is refused with 400.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { GatewayDeps } from '../deps';
import { SIGNUP_SWITCH, VERIFICATION_SWITCH } from '../identity/signup-policy';
import { adminRoute } from './http';
import type { GatewayState } from '../surfaces/state';

/** Each switch with its environment default. */
function switches(deps: GatewayDeps): Record<string, boolean> {
  return {
    [SIGNUP_SWITCH]: deps.settings.SIGNUP_ENABLED,
    [VERIFICATION_SWITCH]: deps.settings.SIGNUP_REQUIRE_EMAIL_VERIFICATION,
    log_rejected_requests: false,
    log_synthetic_probes: false,
  };
}

const patchBody = z.object({
  [SIGNUP_SWITCH]: z.boolean().nullable().optional(),
  [VERIFICATION_SWITCH]: z.boolean().nullable().optional(),
  log_rejected_requests: z.boolean().nullable().optional(),
  log_synthetic_probes: z.boolean().nullable().optional(),
}).strict();

export function settingsAdminRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/admin' });
  const admin = adminRoute(deps);
  const describe = () => Object.fromEntries(Object.entries(switches(deps)).map(([key, fallback]) => {
    const stored = deps.siteSettings.get(key);
    return [key, { stored: typeof stored === 'boolean' ? stored : null, environment: fallback, effective: deps.siteSettings.flag(key, fallback) }];
  }));

  router.get('/settings', admin, (ctx) => {
    ctx.body = describe();
  });

  router.patch('/settings', admin, async (ctx) => {
    const body = validateBody(patchBody, await readJsonBody(ctx.req, 4096));
    const d = deps.distribution;
    if (body[SIGNUP_SWITCH] === true && d.status === 'active' && d.manifest.features?.public_signup === false) {
      throw new AppError('invalid_request', `Invalid field '${SIGNUP_SWITCH}': the active distribution manifest disables public sign-up; the switch cannot reopen it`, { param: SIGNUP_SWITCH });
    }
    // A broken distribution configuration closes sign-up just as firmly (docs/identity.md).
    if (body[SIGNUP_SWITCH] === true && (d.status === 'misconfigured' || d.status === 'failed')) {
      throw new AppError('invalid_request', `Invalid field '${SIGNUP_SWITCH}': the distribution configuration is broken (${d.status === 'failed' ? 'the active manifest failed to load' : d.reason}), which closes sign-up; the switch cannot reopen it`, { param: SIGNUP_SWITCH });
    }
    for (const [key, value] of Object.entries(body)) {
      if (value !== undefined) await deps.siteSettings.write(key, value);
    }
    ctx.state.log.info({ event: 'runtime_settings_changed', keys: Object.keys(body) }, 'runtime settings changed');
    ctx.body = describe();
  });

  documentRoute(router, 'PATCH', '/settings', { body: patchBody, summary: 'Changes runtime switches (sign-up and the like).' });

  return router;
}
