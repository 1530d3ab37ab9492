/**
 * The agent audit log (`GET /admin/agent/audit-log`, docs/agent-audit.md): newest first, filtered
 * by category, paged backwards by `before` (the server's `next_before`); "Newer" returns to the
 * previous page. Administrators appear by user id only (the server never joins e-mails).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { PageProps } from '../pages';
import { navigate } from '../router';
import { Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

/** The audit categories (agent/audit/audit-log.ts `AUDIT_CATEGORIES`). */
export const AUDIT_CATEGORIES = ['settings', 'servers', 'measurements', 'content', 'sandboxes', 'hosts', 'deletion', 'database'] as const;

interface AuditEntry {
  id: string;
  created_at: string;
  category: string;
  action: string;
  source: 'admin' | 'system';
  actor: { type: 'user'; user_id: number } | { type: 'admin_token' } | { type: 'system'; name: string };
  actor_ip: string | null;
  target: { type: string; id: string } | null;
  reason: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

interface AuditPage { entries: AuditEntry[]; next_before: string | null }

function actorOf(entry: AuditEntry): string {
  if (entry.actor.type === 'user') return `user ${entry.actor.user_id}`;
  if (entry.actor.type === 'admin_token') return 'ADMIN_TOKEN';
  return `system: ${entry.actor.name}`;
}

function outcomeTone(outcome: string): 'ok' | 'warn' | 'bad' | 'info' {
  if (outcome === 'succeeded') return 'ok';
  if (outcome === 'refused') return 'warn';
  if (outcome === 'failed') return 'bad';
  return 'info';
}

function AuditLogPage(props: PageProps): JSX.Element {
  const raw = props.query.get('category') ?? '';
  const category = (AUDIT_CATEGORIES as readonly string[]).includes(raw) ? raw : '';
  const [pages, setPages] = useState<string[]>([]);
  const before = pages[pages.length - 1];
  const query = new URLSearchParams({ limit: '50' });
  if (category) query.set('category', category);
  if (before) query.set('before', before);
  const log = useResource<AuditPage>(`/admin/agent/audit-log?${query.toString()}`);
  const choose = (value: string): void => {
    setPages([]);
    navigate(`/admin/agent/audit${value ? `?category=${value}` : ''}`, { replace: true });
  };
  return (
    <Page title="Audit log">
      <div class="row">
        <label for="audit-category">Category</label>
        <select id="audit-category" value={category} onChange={(e) => choose((e.currentTarget).value)}>
          <option value="">all</option>
          {AUDIT_CATEGORIES.map((c) => <option key={c} value={c}>{c}</option>)}
        </select>
        <button type="button" onClick={() => void log.reload()}>Refresh</button>
      </div>
      <Freshness loading={log.loading} loadedAt={log.loadedAt} error={log.error} />
      {log.data ? null : <ErrorNote error={log.error} what="The audit log could not be read" />}
      <Table<AuditEntry>
        caption={`Audit entries${category ? ` (${category})` : ''}${before ? `, older than ${before}` : ', newest first'}`}
        rows={log.data?.entries}
        rowKey={(e) => e.id}
        empty="No audit entry."
        columns={[
          { label: 'Id', cell: (e) => <code>{e.id}</code> },
          { label: 'At', cell: (e) => <When at={e.created_at} /> },
          { label: 'Action', cell: (e) => <span><code>{e.action}</code><br /><small class="muted">{e.category}</small></span> },
          { label: 'Actor', cell: (e) => <span>{actorOf(e)}{e.actor_ip ? <><br /><small class="muted">{e.actor_ip}</small></> : null}</span> },
          { label: 'Target', cell: (e) => (e.target ? <span>{e.target.type} <code>{e.target.id}</code></span> : <span class="muted">–</span>) },
          { label: 'Outcome', cell: (e) => <span><Badge tone={outcomeTone(e.outcome)}>{e.outcome}</Badge>{e.reason ? <><br /><small>{e.reason}</small></> : null}</span> },
          { label: 'Details', cell: (e) => <details><summary>details</summary><pre>{JSON.stringify(e.details, null, 2)}</pre></details> },
        ]}
      />
      <div class="row">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!log.data?.next_before} onClick={() => log.data?.next_before && setPages([...pages, log.data.next_before])}>Older</button>
      </div>
    </Page>
  );
}

export { AuditLogPage };
