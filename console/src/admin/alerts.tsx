/**
 * Chat-webhook alerts (`GET /admin/alerts`): the rules in force and where they came from, the
 * snooze of every alert (`PUT`/`DELETE /admin/alerts/snooze`, up to 7 days), each type's mute
 * (`PUT`/`DELETE /admin/alerts/mutes/{type}`: 1 hour, 1 day, 1 week or until unmuted) and the
 * open incidents. Changes reach every gateway process within the settings sync (5 s).
 */
import type { JSX } from 'preact';
import { api } from '../client';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

interface Rule { enabled: boolean; threshold: number; window_seconds: number; cooldown_seconds: number }
interface Mute { type: string; muted: boolean; duration: string | null; until: string | null; set_at: string | null }
interface Incident { id: string; type: string; opened_at: string; events: number; partial: boolean; suppressed: false | 'snoozed' | 'muted' }
interface AlertsView {
  enabled: boolean;
  webhook: string | null;
  config: { status: string; path: string; source: string; problem?: string };
  rules: Record<string, Rule>;
  snooze: { active: boolean; until: string | null; set_at: string | null };
  mutes: Mute[];
  incidents: Incident[];
  delivery: { queued: number; delivered: number; dropped: number } | null;
}

const SNOOZES: Array<[label: string, seconds: number]> = [['1 hour', 3600], ['4 hours', 4 * 3600], ['1 day', 86_400], ['7 days', 7 * 86_400]];
const MUTES: Array<[label: string, duration: string]> = [['1 hour', '1h'], ['1 day', '1d'], ['1 week', '1w'], ['until unmuted', 'until_unmuted']];

const CONFIG_STATUS: Record<string, string> = {
  loaded: 'from the alerts file',
  built_in: 'built-in thresholds (no alerts file)',
  not_found: 'built-in thresholds: the alerts file was not found',
  invalid: 'built-in thresholds: the alerts file is invalid',
};

function Status(props: { view: AlertsView }): JSX.Element {
  const { view } = props;
  return (
    <dl class="facts">
      <dt>Engine</dt>
      <dd>{view.enabled ? <Badge tone="ok">on</Badge> : <Badge tone="muted">off (ALERTS_ENABLED is not true)</Badge>}</dd>
      <dt>Webhook</dt>
      <dd>{view.webhook ? <code>{view.webhook}</code> : <span class="muted">none configured</span>}</dd>
      <dt>Rules</dt>
      <dd>{CONFIG_STATUS[view.config.status] ?? view.config.status} <code class="muted">{view.config.path}</code>{view.config.problem ? <p class="error">{view.config.problem}</p> : null}</dd>
      {view.delivery ? <><dt>Cards</dt><dd>{view.delivery.delivered} delivered, {view.delivery.queued} waiting, {view.delivery.dropped} dropped</dd></> : null}
    </dl>
  );
}

/** `/admin/alerts`. */
export function AlertsPage(): JSX.Element {
  const alerts = useResource<AlertsView>('/admin/alerts', { refreshMs: 10_000 });
  const reload = (): void => void alerts.reload();
  const view = alerts.data;
  return (
    <Page title="Alerts">
      <Freshness loading={alerts.loading} loadedAt={alerts.loadedAt} error={alerts.error} />
      <ErrorNote error={view ? undefined : alerts.error} what="The alert settings could not be read" />
      {view ? <Status view={view} /> : null}
      <section aria-label="Snooze">
        <h2>Snooze</h2>
        {view?.snooze.active
          ? <p>Every alert is snoozed until <When at={view.snooze.until} />. <ActionButton label="End the snooze" done="Snooze ended." run={() => api('/admin/alerts/snooze', { method: 'DELETE' })} onDone={reload} /></p>
          : <p class="muted">Not snoozed. Incidents that open while snoozed post nothing, not even their recovery.</p>}
        <p>Snooze for {SNOOZES.map(([label, seconds]) => <ActionButton key={label} label={label} done="Snoozed." run={() => api('/admin/alerts/snooze', { method: 'PUT', body: { duration_seconds: seconds } })} onDone={reload} />)}</p>
      </section>
      <Table<Mute>
        caption="Mutes by alert type"
        rows={view?.mutes}
        rowKey={(m) => m.type}
        columns={[
          { label: 'Alert type', cell: (m) => <code>{m.type}</code> },
          { label: 'Rule', cell: (m) => { const r = view?.rules[m.type]; return r ? (r.enabled ? `on: ${r.threshold} in ${r.window_seconds} s, cooldown ${r.cooldown_seconds} s` : 'off') : '–'; } },
          { label: 'State', cell: (m) => (m.muted ? <Badge tone="warn">{m.until ? <>muted until <When at={m.until} /></> : 'muted until unmuted'}</Badge> : <Badge tone="ok">active</Badge>) },
          { label: 'Change', cell: (m) => <>
            {MUTES.map(([label, duration]) => <ActionButton key={duration} label={`Mute ${label}`} done="Muted." run={() => api(`/admin/alerts/mutes/${m.type}`, { method: 'PUT', body: { duration } })} onDone={reload} />)}
            {m.muted ? <ActionButton label="Unmute" done="Unmuted." run={() => api(`/admin/alerts/mutes/${m.type}`, { method: 'DELETE' })} onDone={reload} /> : null}
          </> },
        ]}
      />
      <Table<Incident>
        caption="Open incidents (this gateway process)"
        rows={view?.incidents}
        rowKey={(i) => i.id}
        empty="No open incident."
        columns={[
          { label: 'Incident', cell: (i) => <code>{i.id}</code> },
          { label: 'Opened', cell: (i) => <When at={i.opened_at} /> },
          { label: 'Events', cell: (i) => `${i.partial ? '≥ ' : ''}${i.events}` },
          { label: 'Cards', cell: (i) => (i.suppressed ? <Badge tone="muted">{i.suppressed}: none</Badge> : 'posted') },
        ]}
      />
    </Page>
  );
}
