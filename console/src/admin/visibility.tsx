/**
 * Model visibility (`/admin/visibility`): each model's required role from the files (baseline),
 * the admin override and the effective role (`GET /admin/models/visibility`); setting or removing
 * the override (`PATCH /admin/models/{model}/visibility`, `required_role` or null). A caller
 * below the effective role does not see the model (404).
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../client';
import { ActionButton, ErrorNote, Freshness, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { DemoMark, ROLES, seg, type RoutingListing } from './common';

interface Visibility { model_id: string; baseline: string | null; override: string | null; effective: string | null }

function Override(props: { v: Visibility; onChanged: () => void }): JSX.Element {
  const [role, setRole] = useState(props.v.override ?? '');
  useEffect(() => setRole(props.v.override ?? ''), [props.v.override]);
  const path = `/admin/models/${seg(props.v.model_id)}/visibility`;
  return (
    <span class="row">
      <select aria-label={`Required role override of ${props.v.model_id}`} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
        <option value="">no override</option>
        {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
      </select>
      <ActionButton label="Save" done="Saved." run={() => api(path, { method: 'PATCH', body: { required_role: role || null } })} onDone={props.onChanged} />
    </span>
  );
}

/** `/admin/visibility`. */
export function VisibilityPage(): JSX.Element {
  const list = useResource<{ models: Visibility[] }>('/admin/models/visibility');
  const routing = useResource<RoutingListing>('/admin/routing');
  const demo = new Map((routing.data?.models ?? []).map((m) => [m.id, m]));
  return (
    <Page title="Model visibility">
      <Freshness loading={list.loading} loadedAt={list.loadedAt} error={list.error} />
      <ErrorNote error={list.data ? undefined : list.error} what="Visibility could not be read" />
      <Table<Visibility>
        caption="Who may see each model"
        rows={list.data?.models}
        rowKey={(v) => v.model_id}
        columns={[
          { label: 'Model', cell: (v) => <>{v.model_id} <DemoMark model={demo.get(v.model_id) ?? {}} /></> },
          { label: 'From the files', cell: (v) => v.baseline ?? <span class="muted">anyone</span> },
          { label: 'Override', cell: (v) => v.override ?? <span class="muted">none</span> },
          { label: 'Effective', cell: (v) => <strong>{v.effective ?? 'anyone'}</strong> },
          { label: 'Change', cell: (v) => <Override key={v.model_id} v={v} onChanged={() => void list.reload()} /> },
        ]}
      />
    </Page>
  );
}
