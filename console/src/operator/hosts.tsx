/**
 * Hosts (`GET /admin/agent/runner-hosts`, docs/agent-hosts.md): each execution host with its slots
 * in use out of the effective slots, its display state (online, stale, never seen, draining) and
 * the slots' display (`applying 6`, `redeploy to change`…); the slot change (2..128, or empty for
 * the host's default: checked before sending), a guarded removal (confirmed first; the server's
 * 409 reason shown beside the button) and taking a pending removal back. Refreshed every 10 s and
 * after each change; each host links to its workflow (`host:<hostId>`) in the Temporal UI.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, fieldProps, SubmitRow, useSubmit } from '../ui/form';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { hostWorkflowId } from '../ui/temporal';
import { TemporalLink } from '../ui/temporal-link';

/** A host as the operator view lists it (the fields this page shows). */
export interface HostView {
  host_id: string;
  online: boolean;
  stale: boolean;
  slots: { saved: number | null; reported: number | null; effective: number; default: number; display: string | null };
  running_turns: number;
  runtime: string | null;
  runner_version: string | null;
  last_heartbeat_at: string | null;
  removal_requested_at: string | null;
}

/** Slot bounds of `PUT …/slots` (the server's schema: an integer 2..128, or null for the default). */
export const SLOTS_MIN = 2;
export const SLOTS_MAX = 128;

/** The slots to send for the field's text: null for empty (the default), a number, or the error to show. */
export function slotsOf(text: string): { slots: number | null } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === '') return { slots: null };
  const n = Number(trimmed);
  if (!/^[0-9]+$/.test(trimmed) || !Number.isSafeInteger(n) || n < SLOTS_MIN || n > SLOTS_MAX) {
    return { error: `Slots must be a whole number from ${SLOTS_MIN} to ${SLOTS_MAX}, or empty for the host's default.` };
  }
  return { slots: n };
}

function HostState(props: { host: HostView }): JSX.Element {
  const { host } = props;
  if (host.removal_requested_at) return <Badge tone="warn" title={`Removal requested ${host.removal_requested_at}`}>draining</Badge>;
  if (host.online) return <Badge tone="ok">online</Badge>;
  if (host.stale) return <Badge tone="bad" title="No heartbeat within the stale limit (90 s)">stale</Badge>;
  return <Badge tone="muted" title="This host has never sent a heartbeat">never seen</Badge>;
}

function SlotForm(props: { host: HostView; onSaved: () => void }): JSX.Element {
  const { host } = props;
  const name = `slots-${host.host_id}`;
  const [text, setText] = useState(host.slots.saved === null ? '' : String(host.slots.saved));
  const form = useSubmit([name, 'slots']);
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    const parsed = slotsOf(text);
    void form.submit(
      () => ('error' in parsed ? { [name]: parsed.error } : {}),
      async () => {
        if ('error' in parsed) return;
        await api(`/admin/agent/runner-hosts/${encodeURIComponent(host.host_id)}/slots`, { method: 'PUT', body: { slots: parsed.slots } });
        props.onSaved();
        return parsed.slots === null ? 'Back to the host default.' : `Saved ${parsed.slots} slots.`;
      },
    );
  };
  const errors = form.errors.slots ? { ...form.errors, [name]: form.errors.slots } : form.errors;
  return (
    <form class="slot-form" onSubmit={onSubmit} noValidate>
      <Field label={`Slots of ${host.host_id}`} name={name} error={errors[name]} hint={`${SLOTS_MIN}–${SLOTS_MAX}; empty: the host default (${host.slots.default})`}>
        <input {...fieldProps(name, errors)} type="text" inputMode="numeric" size={5} value={text} onInput={(e) => setText((e.currentTarget).value)} />
      </Field>
      <SubmitRow label="Save slots" busy={form.busy} errors={errors} done={form.done} />
    </form>
  );
}

function HostActions(props: { host: HostView; onDone: () => void }): JSX.Element {
  const path = `/admin/agent/runner-hosts/${encodeURIComponent(props.host.host_id)}`;
  if (props.host.removal_requested_at) {
    return <ActionButton label="Cancel removal" run={() => api(`${path}/cancel-removal`, { method: 'POST' })} done="Removal cancelled." onDone={props.onDone} />;
  }
  return (
    <ActionButton
      label="Remove host" danger onDone={props.onDone}
      confirm={`Remove host ${props.host.host_id}? A host that still holds sandboxes or turns drains first and is removed once nothing holds it.`}
      run={() => api(path, { method: 'DELETE' })}
      done="Removal accepted (removed, or draining until nothing holds it)."
    />
  );
}

function HostsPage(): JSX.Element {
  const hosts = useResource<{ hosts: HostView[] }>('/admin/agent/runner-hosts', { refreshMs: 10_000 });
  const reload = (): void => void hosts.reload();
  return (
    <Page title="Hosts">
      <Freshness loading={hosts.loading} loadedAt={hosts.loadedAt} error={hosts.error} />
      {hosts.data ? null : <ErrorNote error={hosts.error} what="Hosts could not be read" />}
      <Table<HostView>
        caption="Execution hosts and their slots"
        rows={hosts.data?.hosts}
        rowKey={(h) => h.host_id}
        empty="No host has enrolled."
        columns={[
          { label: 'Host', cell: (h) => <span><code>{h.host_id}</code><br /><TemporalLink workflowId={hostWorkflowId(h.host_id)} /></span> },
          { label: 'State', cell: (h) => <HostState host={h} /> },
          {
            label: 'Slots used / total',
            cell: (h) => (
              <span>
                {h.running_turns} / {h.slots.effective}
                {h.slots.display ? <> <Badge tone="info">{h.slots.display}</Badge></> : null}
                <br /><small class="muted">saved {h.slots.saved ?? 'default'}, reported {h.slots.reported ?? '–'}</small>
              </span>
            ),
          },
          { label: 'Runner', cell: (h) => <span>{h.runtime ?? '–'}<br /><small class="muted">version {h.runner_version ?? '–'}</small></span> },
          { label: 'Last heartbeat', cell: (h) => <When at={h.last_heartbeat_at} /> },
          { label: 'Change slots', cell: (h) => <SlotForm host={h} onSaved={reload} /> },
          { label: 'Removal', cell: (h) => <HostActions host={h} onDone={reload} /> },
        ]}
      />
    </Page>
  );
}

export { HostsPage };
