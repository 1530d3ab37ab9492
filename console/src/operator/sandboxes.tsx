/**
 * The sandbox inventory (`GET /admin/agent/sandboxes?state=…`, docs/sandboxes.md "Inventory"): each
 * group with its state, pending action, host freshness, the container's latest observation and the
 * chats it holds, and every lifecycle action (./sandbox-actions.tsx) with its refusal reason; a
 * batch action on the selected groups. The console shows every state by default (`all`, hidden
 * groups marked), so a stopped group stays in view after its stop. Refreshed every 30 s (the
 * inventory's own cadence), after each action, and every 5 s while a group is in a pending state
 * (`stop_pending`, `deleting`…), so an accepted action's end shows without a reload.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { PageProps } from '../pages';
import { navigate } from '../router';
import { Badge, ErrorNote, Freshness, Link, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { chatWorkflowId, sandboxGroupWorkflowId } from '../ui/temporal';
import { TemporalLink } from '../ui/temporal-link';
import { BatchActions, PENDING_STATES, RowActions, type SandboxEntry } from './sandbox-actions';

/** The inventory's states (agent/sandboxes/sandbox-inventory.ts `INVENTORY_STATES`) and `all`. */
export const STATE_FILTERS = ['all', 'running', 'starting', 'stop_pending', 'stopped', 'dead', 'deleting', 'deleted', 'archiving', 'cold', 'restoring'] as const;

/** Refresh cadence: the inventory's own (30 s), and while a group is pending (5 s). */
const INVENTORY_REFRESH_MS = 30_000;
const PENDING_REFRESH_MS = 5_000;

function stateTone(state: string): 'ok' | 'warn' | 'bad' | 'muted' | 'info' {
  if (state === 'running') return 'ok';
  if (PENDING_STATES.includes(state)) return 'info';
  if (state === 'dead') return 'bad';
  if (state === 'stopped' || state === 'cold') return 'warn';
  return 'muted';
}

function StateCell(props: { entry: SandboxEntry }): JSX.Element {
  const { entry } = props;
  return (
    <span data-testid={`state-${entry.group_id}`}>
      <Badge tone={stateTone(entry.state)}>{entry.state}</Badge>
      {entry.pending_action ? <> <Badge tone="info" title="Action in progress">{entry.pending_action}</Badge></> : null}
      {entry.hidden ? <> <Badge tone="muted" title="Removed from the inventory">hidden{entry.hidden_reason ? ` (${entry.hidden_reason})` : ''}</Badge></> : null}
      {entry.native_resume_lost ? <> <Badge tone="warn">native resume lost</Badge></> : null}
      <br /><small class="muted">container {entry.observed_state ?? 'not observed'}{entry.observation_stale ? ' (stale reading)' : ''}</small>
    </span>
  );
}

function Members(props: { entry: SandboxEntry }): JSX.Element {
  if (!props.entry.members.length) return <span class="muted">none</span>;
  return (
    <div>
      {props.entry.members.map((m) => (
        <div key={m.job_id}>
          <Link to={`/admin/agent/runs/${encodeURIComponent(m.job_id)}`}><code>{m.job_id}</code></Link>{' '}
          <small class="muted">owner {m.owner_id}</small> <TemporalLink workflowId={chatWorkflowId(m.job_id)} />
        </div>
      ))}
    </div>
  );
}

function SandboxesPage(props: PageProps): JSX.Element {
  const raw = props.query.get('state') ?? 'all';
  const state = (STATE_FILTERS as readonly string[]).includes(raw) ? raw : 'all';
  const inventory = useResource<{ sandboxes: SandboxEntry[] }>(`/admin/agent/sandboxes?state=${encodeURIComponent(state)}`, { refreshMs: INVENTORY_REFRESH_MS });
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const rows = inventory.data?.sandboxes;
  const pending = (rows ?? []).some((s) => PENDING_STATES.includes(s.state) || s.pending_action !== null);
  useEffect(() => {
    if (!pending) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void inventory.reload();
    }, PENDING_REFRESH_MS);
    return () => clearInterval(timer);
  }, [pending, inventory.reload]);
  const reload = (): void => void inventory.reload();
  const toggle = (groupId: string, on: boolean): void => {
    const next = new Set(selected);
    if (on) next.add(groupId);
    else next.delete(groupId);
    setSelected(next);
  };
  const chosen = (rows ?? []).filter((s) => selected.has(s.group_id));
  return (
    <Page title="Sandboxes">
      <div class="row">
        <label for="sandbox-state">State</label>
        <select id="sandbox-state" value={state} onChange={(e) => navigate(`/admin/agent/sandboxes?state=${(e.currentTarget).value}`, { replace: true })}>
          {STATE_FILTERS.map((s) => <option key={s} value={s}>{s === 'all' ? 'all (hidden included)' : s}</option>)}
        </select>
        <span class="muted">{rows ? `${rows.length} sandbox(es)` : ''}{pending ? ' · an action is under way: refreshing every 5 s' : ''}</span>
      </div>
      <Freshness loading={inventory.loading} loadedAt={inventory.loadedAt} error={inventory.error} />
      {inventory.data ? null : <ErrorNote error={inventory.error} what="The inventory could not be read" />}
      <BatchActions selected={chosen} onDone={reload} clear={() => setSelected(new Set())} />
      <Table<SandboxEntry>
        caption={`Sandbox groups (${state})`}
        rows={rows}
        rowKey={(s) => s.group_id}
        empty="No sandbox in this state."
        columns={[
          {
            label: 'Select',
            cell: (s) => <input type="checkbox" aria-label={`Select ${s.group_id}`} checked={selected.has(s.group_id)} onChange={(e) => toggle(s.group_id, (e.currentTarget).checked)} />,
          },
          { label: 'Group', cell: (s) => <span><code>{s.group_id}</code><br /><small class="muted">gen {s.generation} · {s.execution_profile}</small><br /><TemporalLink workflowId={sandboxGroupWorkflowId(s.group_id)} /></span> },
          { label: 'State', cell: (s) => <StateCell entry={s} /> },
          { label: 'Host', cell: (s) => <span><code>{s.host_id}</code>{s.host_stale ? <> <Badge tone="bad">stale</Badge></> : null}</span> },
          { label: 'Turns', cell: (s) => `${s.running_turns} running, ${s.queued_turns} queued` },
          { label: 'Last activity', cell: (s) => <When at={s.last_activity_at} /> },
          { label: 'Chats', cell: (s) => <Members entry={s} /> },
          { label: 'Actions', cell: (s) => <RowActions entry={s} onDone={reload} /> },
        ]}
      />
    </Page>
  );
}

export { SandboxesPage };
