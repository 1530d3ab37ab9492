/**
 * Sign-in protection and runtime switches: the auth-failure blocklist (`GET /admin/auth-blocks`,
 * lifting one with `POST /admin/auth-blocks/clear`) and the runtime settings
 * (`GET/PATCH /admin/settings`: stored value, environment default and effective value of each
 * switch; "use default" removes the stored value). A refusal, such as re-opening sign-up that the
 * distribution manifest closes, is shown beside the switch.
 */
import type { JSX } from 'preact';
import { api } from '../client';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

interface Block { source: string; blocked_at: string; blocked_until: string; failures_in_window: number }

/** `/admin/auth-blocks`. */
export function AuthBlocksPage(): JSX.Element {
  const blocks = useResource<{ data: Block[] }>('/admin/auth-blocks', { refreshMs: 10_000 });
  return (
    <Page title="Sign-in blocks">
      <p class="muted">Sources blocked after repeated authentication failures.</p>
      <Freshness loading={blocks.loading} loadedAt={blocks.loadedAt} error={blocks.error} />
      <ErrorNote error={blocks.data ? undefined : blocks.error} what="The blocklist could not be read" />
      <Table<Block>
        caption="Blocked sources"
        rows={blocks.data?.data}
        rowKey={(b) => b.source}
        empty="No source is blocked."
        columns={[
          { label: 'Source', cell: (b) => <code>{b.source}</code> },
          { label: 'Blocked at', cell: (b) => <When at={b.blocked_at} /> },
          { label: 'Until', cell: (b) => <When at={b.blocked_until} /> },
          { label: 'Failures in window', cell: (b) => b.failures_in_window },
          { label: 'Action', cell: (b) => <ActionButton label="Lift block" done="Block lifted." run={() => api('/admin/auth-blocks/clear', { method: 'POST', body: { ip: b.source } })} onDone={() => void blocks.reload()} /> },
        ]}
      />
    </Page>
  );
}

interface Switch { stored: boolean | null; environment: boolean; effective: boolean }

const LABELS: Record<string, string> = {
  signup_enabled: 'Public sign-up',
  signup_require_email_verification: 'Sign-up requires e-mail verification',
  log_rejected_requests: 'Log rejected requests',
  log_synthetic_probes: 'Log synthetic probes',
};

/** `/admin/settings`. */
export function SettingsPage(): JSX.Element {
  const settings = useResource<Record<string, Switch>>('/admin/settings');
  const rows = Object.entries(settings.data ?? {}).map(([key, s]) => ({ key, ...s }));
  const set = (key: string, value: boolean | null) => () => api('/admin/settings', { method: 'PATCH', body: { [key]: value } });
  const reload = (): void => void settings.reload();
  return (
    <Page title="Runtime settings">
      <Freshness loading={settings.loading} loadedAt={settings.loadedAt} error={settings.error} />
      <ErrorNote error={settings.data ? undefined : settings.error} what="The settings could not be read" />
      <Table
        caption="Switches (stored in the database, overriding the environment)"
        rows={settings.data ? rows : undefined}
        rowKey={(r) => r.key}
        columns={[
          { label: 'Switch', cell: (r) => <>{LABELS[r.key] ?? r.key} <code class="muted">{r.key}</code></> },
          { label: 'Effective', cell: (r) => r.effective ? <Badge tone="ok">on</Badge> : <Badge tone="muted">off</Badge> },
          { label: 'Stored', cell: (r) => r.stored === null ? <span class="muted">none</span> : r.stored ? 'on' : 'off' },
          { label: 'Environment default', cell: (r) => (r.environment ? 'on' : 'off') },
          { label: 'Change', cell: (r) => <>
            <ActionButton label={`Turn ${r.effective ? 'off' : 'on'}`} done="Saved." run={set(r.key, !r.effective)} onDone={reload} />
            {r.stored !== null ? <ActionButton label="Use the default" done="Saved." run={set(r.key, null)} onDone={reload} /> : null}
          </> },
        ]}
      />
    </Page>
  );
}
