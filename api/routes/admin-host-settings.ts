/**
 * `GET, PUT /admin/agent/host-settings` (sandbox and workspace limits; operator auth;
 * docs/agent-admin.md "Host settings"). The same shape as `/admin/agent/settings`: GET shows every
 * limit's effective value, its default, whether it is saved and where it applies; PUT
 * `{settings: {<key>: <value>}}` is partial, `null` returns a key to its default; a former key
 * (forks, terminals) is a 400 that says why it was removed. Saved with its
 * audit row (`agent.host_settings.update`) in one transaction, applied in this process before the
 * answer and in every other process (the control worker's admission) within 5 s.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody } from '../../lib/http/json-body';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import { parseSettingsPatch, saveSettings } from '../../agent/settings/admin-settings';
import { HOST_SETTING_DEFINITIONS, HOST_SETTING_KEYS, RETIRED_HOST_SETTINGS, type HostSettingKey } from '../../agent/settings/host-settings';
import type { AgentSettings } from '../../agent/settings/settings-sync';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 64 * 1024;

function hostSettingsView(settings: AgentSettings): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  for (const key of HOST_SETTING_KEYS) {
    const def = HOST_SETTING_DEFINITIONS[key];
    const { updatedAt } = settings.savedMeta(key);
    view[key] = { value: settings.current[key], default: def.fallback(settings.env), saved: updatedAt !== null, updated_at: updatedAt, applies_to: def.appliesTo };
  }
  return { revision: settings.appliedRevision ?? null, settings: view };
}

export function adminHostSettingsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/host-settings', operator, async (ctx) => {
    await deps.agentSettings.refresh();
    ctx.body = hostSettingsView(deps.agentSettings);
  });

  router.put('/admin/agent/host-settings', operator, async (ctx) => {
    const patch = parseSettingsPatch<HostSettingKey>(await readJsonBody(ctx.req, BODY_LIMIT), HOST_SETTING_DEFINITIONS, RETIRED_HOST_SETTINGS);
    const saved = await saveSettings(deps.db, patch, {
      env: deps.agentSettings.env, sealer: deps.agentSettings.sealer, by: operatorAudit(ctx),
      audit: { category: 'settings', action: 'agent.host_settings.update', target: { type: 'settings', id: 'host' } },
    });
    await deps.agentSettings.refresh(true);
    ctx.body = { ...hostSettingsView(deps.agentSettings), changed: saved.changed };
  });
  documentRoute(router, 'PUT', '/admin/agent/host-settings', { bodyText: 'An object of host setting names and values (null resets one); unknown names are refused (docs/agent-admin.md).', summary: 'Changes host settings.' });
  return router;
}
