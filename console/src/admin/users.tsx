/**
 * Users (`/admin/users`): search by e-mail (`GET /admin/users?email=`, pages of 100 by
 * `after_id`), change role, permissions (`agent.use`, `agent.admin`) and suspension
 * (`PATCH /admin/users/{id}`), and permanent deletion (`POST …/hard-delete`): when the server has
 * it turned off, its refusal is shown as the reason.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../client';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { ROLES } from './common';

interface User { id: number; email: string; role: string; permissions: string[]; email_verified: boolean; suspended: boolean; created_at: string }

const PERMISSIONS = ['agent.use', 'agent.admin'] as const;

function Access(props: { user: User; onChanged: () => void }): JSX.Element {
  const [role, setRole] = useState(props.user.role);
  const [perms, setPerms] = useState<string[]>(props.user.permissions);
  // Follow the server's values when they change (a reload after saving, another administrator).
  const serverPerms = props.user.permissions.join(',');
  useEffect(() => {
    setRole(props.user.role);
    setPerms(props.user.permissions);
  }, [props.user.role, serverPerms]);
  const toggle = (p: string): void => setPerms((now) => (now.includes(p) ? now.filter((x) => x !== p) : [...now, p]));
  return (
    <div class="row">
      <select aria-label={`Role of ${props.user.email}`} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
        {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
      </select>
      {PERMISSIONS.map((p) => (
        <label key={p}><input type="checkbox" checked={perms.includes(p)} onChange={() => toggle(p)} /> {p}</label>
      ))}
      <ActionButton label="Save access" done="Saved." run={() => api(`/admin/users/${props.user.id}`, { method: 'PATCH', body: { role, permissions: perms } })} onDone={props.onChanged} />
    </div>
  );
}

/** `/admin/users`. */
export function UsersPage(): JSX.Element {
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  const [after, setAfter] = useState<number[]>([0]);
  const cursor = after[after.length - 1]!;
  const users = useResource<{ data: User[] }>(`/admin/users?limit=100&after_id=${cursor}${query ? `&email=${encodeURIComponent(query)}` : ''}`);
  const rows = users.data?.data;
  const reload = (): void => void users.reload();
  return (
    <Page title="Users">
      <form role="search" onSubmit={(e) => { e.preventDefault(); setQuery(search.trim()); setAfter([0]); }} class="row">
        <label for="user-search">E-mail contains</label>
        <input id="user-search" type="search" value={search} maxLength={320} onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <Freshness loading={users.loading} loadedAt={users.loadedAt} error={users.error} />
      <ErrorNote error={users.error} what="The users could not be read" />
      <Table<User>
        caption={query ? `Users whose e-mail contains “${query}”` : 'Users'}
        rows={rows}
        rowKey={(u) => u.id}
        empty="No users match."
        columns={[
          { label: 'Id', cell: (u) => u.id },
          { label: 'E-mail', cell: (u) => <>{u.email} {u.email_verified ? null : <Badge tone="muted">unverified</Badge>}</> },
          { label: 'Created', cell: (u) => <When at={u.created_at} /> },
          { label: 'State', cell: (u) => u.suspended ? <Badge tone="bad">suspended</Badge> : <Badge tone="ok">active</Badge> },
          { label: 'Role and permissions', cell: (u) => <Access key={u.id} user={u} onChanged={reload} /> },
          { label: 'Actions', cell: (u) => <>
            <ActionButton label={u.suspended ? 'Unsuspend' : 'Suspend'} danger={!u.suspended} confirm={u.suspended ? undefined : `Suspend ${u.email}? Their sessions end.`} done="Saved." run={() => api(`/admin/users/${u.id}`, { method: 'PATCH', body: { suspended: !u.suspended } })} onDone={reload} />
            <ActionButton label="Delete permanently" danger confirm={`Permanently delete ${u.email} and their request log?`} done="Deleted." run={() => api(`/admin/users/${u.id}/hard-delete`, { method: 'POST' })} onDone={reload} />
          </> },
        ]}
      />
      <div class="row">
        {after.length > 1 ? <button type="button" onClick={() => setAfter(after.slice(0, -1))}>Previous page</button> : null}
        {rows && rows.length === 100 ? <button type="button" onClick={() => setAfter([...after, rows[rows.length - 1]!.id])}>Next page</button> : null}
      </div>
    </Page>
  );
}
