/**
 * The sandbox lifecycle actions an operator may send (docs/sandboxes.md "Actions, conditions and
 * refusals"): one `POST /admin/agent/sandboxes/<group>/<path>` each, whose body carries what the
 * operator reviewed in the inventory (container id, generation, last activity). The server decides:
 * every action is offered on every listed group it could apply to, and a refusal (409 with the
 * reason, 400, 503) is shown beside its button. Batches go to `POST /admin/agent/sandboxes/batch`
 * with one result per group.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, useSession } from '../client';
import { ActionButton } from '../ui/parts';

/** A sandbox group as the inventory lists it (the fields the pages use). */
export interface SandboxEntry {
  group_id: string;
  host_id: string;
  host_stale: boolean;
  container_name: string;
  container_id: string | null;
  generation: number;
  state: string;
  execution_profile: string;
  pending_action: string | null;
  hidden: boolean;
  hidden_reason: string | null;
  native_resume_lost: boolean;
  last_activity_at: string;
  running_turns: number;
  queued_turns: number;
  members: Array<{ job_id: string; owner_id: number }>;
  observed_state: string | null;
  observation_stale: boolean;
}

/** One action: its label, route path, batch name, what its body needs, and the confirmation asked first. */
export interface SandboxActionDef {
  label: string;
  path: string;
  batch: string;
  body: 'stop' | 'container' | 'generation';
  confirm?: string;
  danger?: boolean;
  /** Offered for hidden groups only (`restore`), or for shown groups only (every other). */
  forHidden: boolean;
}

/** Every action of the API's table (api/routes/admin-sandboxes.ts `SANDBOX_ACTIONS`). */
export const SANDBOX_ACTION_DEFS: readonly SandboxActionDef[] = [
  { label: 'Stop', path: 'stop', batch: 'stop', body: 'stop', forHidden: false },
  { label: 'Archive and delete', path: 'archive', batch: 'archive_delete', body: 'container', forHidden: false, confirm: 'Archive this sandbox to the object store and delete its container?' },
  { label: 'Delete', path: 'delete', batch: 'delete', body: 'container', danger: true, forHidden: false, confirm: 'Delete this sandbox without an archive? Its workspace is lost.' },
  { label: 'Force delete', path: 'force-delete', batch: 'force_delete', body: 'container', danger: true, forHidden: false, confirm: 'Verify the container is stopped and delete it without an archive? Its workspace is lost.' },
  { label: 'Remove from inventory', path: 'remove-from-inventory', batch: 'remove_from_inventory', body: 'generation', forHidden: false },
  { label: 'Restore to inventory', path: 'restore-to-inventory', batch: 'restore_to_inventory', body: 'generation', forHidden: true },
];

/** States in which the host still has work for an accepted action (the console watches them closely). */
export const PENDING_STATES: readonly string[] = ['stop_pending', 'deleting', 'archiving', 'restoring', 'starting'];

/** The body of `def` for `entry` (what the operator reviewed), or why it cannot be sent. */
export function actionBody(def: SandboxActionDef, entry: SandboxEntry): { body: Record<string, unknown> } | { why: string } {
  if (def.body === 'generation') return { body: { generation: entry.generation } };
  if (entry.container_id === null) return { why: 'No container is recorded for this sandbox yet.' };
  if (def.body === 'container') return { body: { container_id: entry.container_id, generation: entry.generation } };
  return { body: { container_id: entry.container_id, generation: entry.generation, last_activity_at: entry.last_activity_at } };
}

/** The actions of one group, each with its outcome (or refusal) beside it. */
export function RowActions(props: { entry: SandboxEntry; onDone: () => void }): JSX.Element {
  const { entry } = props;
  return (
    <div class="row-actions" role="group" aria-label={`Actions on ${entry.group_id}`}>
      {SANDBOX_ACTION_DEFS.filter((d) => d.forHidden === entry.hidden).map((def) => {
        const body = actionBody(def, entry);
        if ('why' in body) return <button key={def.path} type="button" disabled title={body.why}>{def.label}</button>;
        return (
          <ActionButton
            key={def.path} label={def.label} danger={def.danger} confirm={def.confirm} onDone={props.onDone}
            run={() => api(`/admin/agent/sandboxes/${encodeURIComponent(entry.group_id)}/${def.path}`, { method: 'POST', body: body.body })}
            done="Accepted."
          />
        );
      })}
    </div>
  );
}

interface BatchResult { group_id: string; status: number; state?: string; error?: { message: string } }

/** The batch form: one action on every selected group; the answer lists each group's result. */
export function BatchActions(props: { selected: readonly SandboxEntry[]; onDone: () => void; clear: () => void }): JSX.Element {
  const { unreachableSince } = useSession();
  const [batch, setBatch] = useState(SANDBOX_ACTION_DEFS[0]!.batch);
  const [busy, setBusy] = useState(false);
  const [results, setResults] = useState<BatchResult[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const def = SANDBOX_ACTION_DEFS.find((d) => d.batch === batch)!;
  const send = async (event: Event): Promise<void> => {
    event.preventDefault();
    setError(undefined);
    setResults(undefined);
    const items: Array<Record<string, unknown>> = [];
    for (const entry of props.selected) {
      const body = actionBody(def, entry);
      if ('why' in body) return setError(`${entry.group_id}: ${body.why}`);
      items.push({ group_id: entry.group_id, ...body.body });
    }
    if (!items.length) return setError('Select at least one sandbox.');
    if (def.confirm && !window.confirm(`${def.label}: ${items.length} sandbox(es). ${def.confirm}`)) return;
    setBusy(true);
    try {
      const answer = await api<{ results: BatchResult[] }>('/admin/agent/sandboxes/batch', { method: 'POST', body: { action: def.batch, items } });
      setResults(answer.results);
      props.clear();
      props.onDone();
    } catch (err) {
      setError(err instanceof ApiError ? `${err.message}${err.status ? ` (${err.status})` : ''}` : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="batch" onSubmit={(e) => void send(e)} aria-label="Batch action">
      <div class="row">
        <label for="batch-action">Batch action on {props.selected.length} selected</label>
        <select id="batch-action" value={batch} onChange={(e) => setBatch((e.currentTarget).value)}>
          {SANDBOX_ACTION_DEFS.map((d) => <option key={d.batch} value={d.batch}>{d.label}</option>)}
        </select>
        <button type="submit" disabled={busy || !props.selected.length || unreachableSince !== undefined}>{busy ? 'Working…' : 'Apply to selected'}</button>
      </div>
      {error ? <p class="error" role="alert">{error}</p> : null}
      {results ? (
        <ul role="status" aria-label="Batch results">
          {results.map((r) => (
            <li key={r.group_id} class={r.error ? 'error' : 'ok'}><code>{r.group_id}</code>: {r.error ? `${r.error.message} (${r.status})` : `${r.state ?? 'accepted'} (${r.status})`}</li>
          ))}
        </ul>
      ) : null}
    </form>
  );
}
