/**
 * The account's security view (`/settings/security`): every time an operator signed in as this
 * account for support (`GET /auth/impersonations`, docs/identity.md "Impersonation"): who, why,
 * when it started, until when it could act, when it ended early, and how often it was used; and
 * the owner's SSH keys (./ssh-keys-section.tsx).
 */
import type { JSX } from 'preact';
import { ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { SshKeysSection } from './ssh-keys-section';

interface Impersonation {
  id: number;
  admin_user_id: number;
  admin_email: string | null;
  reason: string | null;
  started_at: string;
  expires_at: string;
  ended_at: string | null;
  uses: number;
  last_used_at: string | null;
}

export function SecurityPage(): JSX.Element {
  const list = useResource<{ data: Impersonation[] }>('/auth/impersonations');
  return (
    <Page title="Security">
      <p class="muted">Support staff can sign in as you for up to 15 minutes at a time; they cannot create API keys or change your password. Every such sign-in is listed here.</p>
      <Freshness loading={list.loading} loadedAt={list.loadedAt} error={list.error} />
      <ErrorNote error={list.error} what="Sign-ins as you could not be read" />
      <Table<Impersonation>
        caption="Sign-ins as you by support" rows={list.data?.data} rowKey={(i) => i.id} empty="Nobody has signed in as you."
        columns={[
          { label: 'Who', cell: (i) => i.admin_email ?? `administrator ${i.admin_user_id}` },
          { label: 'Why', cell: (i) => i.reason ?? '—' },
          { label: 'Started', cell: (i) => <When at={i.started_at} /> },
          { label: 'Until', cell: (i) => <When at={i.ended_at ?? i.expires_at} /> },
          { label: 'Requests', cell: (i) => String(i.uses) },
        ]}
      />
      <SshKeysSection />
    </Page>
  );
}
