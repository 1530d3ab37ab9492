/**
 * `GET, PUT /admin/agent/settings` (operator auth; secrets write-only; docs/agent-admin.md
 * "Settings"). GET shows every setting's effective value and where it comes from; credential
 * fields show only whether they are configured. PUT `{settings: {<key>: <value>}}` is partial:
 * omitted keys keep their values, `null` returns a key to its default (clears a credential), an
 * empty string keeps a saved credential. Saved with its audit row in one transaction, then applied
 * in this process before the answer (other processes within 5 s).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody } from '../../lib/http/json-body';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import { parseSettingsPatch, saveSettings, SETTING_DEFINITIONS, SETTING_KEYS } from '../../agent/settings/admin-settings';
import type { AgentSettings } from '../../agent/settings/settings-sync';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 256 * 1024;

function settingsView(settings: AgentSettings): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  const defaults = SETTING_KEYS.map((key) => [key, SETTING_DEFINITIONS[key]] as const);
  for (const [key, def] of defaults) {
    const { updatedAt } = settings.savedMeta(key);
    if (def.credential) {
      view[key] = { credential: true, configured: settings.current[key] !== null, saved: updatedAt !== null, updated_at: updatedAt };
    } else {
      view[key] = { value: settings.current[key], default: def.fallback(settings.env), saved: updatedAt !== null, updated_at: updatedAt };
    }
  }
  return { revision: settings.appliedRevision ?? null, encryption_configured: settings.sealer !== undefined, settings: view };
}

export function adminSettingsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/settings', operator, async (ctx) => {
    await deps.agentSettings.refresh();
    ctx.body = settingsView(deps.agentSettings);
  });

  router.put('/admin/agent/settings', operator, async (ctx) => {
    const patch = parseSettingsPatch(await readJsonBody(ctx.req, BODY_LIMIT));
    const saved = await saveSettings(deps.db, patch, { env: deps.agentSettings.env, sealer: deps.agentSettings.sealer, by: operatorAudit(ctx) });
    await deps.agentSettings.refresh(true);
    ctx.body = { ...settingsView(deps.agentSettings), changed: saved.changed };
  });
  documentRoute(router, 'PUT', '/admin/agent/settings', { bodyText: 'An object of setting names and values (null resets one); unknown names are refused (docs/agent-admin.md).', summary: 'Changes control-plane settings.' });
  return router;
}
