/**
 * The access-token signing keys on the operator's settings page (docs/identity.md "Signing
 * keys"): which key signs now, the stored keys with when each starts and stops verifying, and a
 * button that rotates (confirmed first; the old key keeps verifying until its tokens expire).
 */
import type { JSX } from 'preact';
import { api } from '../client';
import { ActionButton, ErrorNote, Freshness, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

interface SigningKey {
  kid: string;
  created_at: string;
  activates_at: string;
  retires_at: string | null;
  retired: boolean;
}

interface SigningKeys {
  signing_kid: string;
  rotatable: boolean;
  data: SigningKey[];
}

const PATH = '/admin/agent/signing-keys';

export function SigningKeysSection(): JSX.Element {
  const keys = useResource<SigningKeys>(PATH);
  const body = keys.data;
  return (
    <section aria-labelledby="h-signing-keys">
      <h2 id="h-signing-keys">Signing keys</h2>
      <p class="muted">
        Access tokens are signed with one key. Rotating starts a new key a few seconds later in every process; the old key keeps verifying
        until the longest token it signed has expired. Audited.
      </p>
      <Freshness loading={keys.loading} loadedAt={keys.loadedAt} error={keys.error} />
      {body ? null : <ErrorNote error={keys.error} what="Signing keys could not be read" />}
      {body ? <p>Signing now: <code>{body.signing_kid}</code>{body.signing_kid === 'bootstrap' ? ' (AUTH_JWT_SECRET)' : ''}</p> : null}
      {body && !body.rotatable ? <p class="warn">No AUTH_JWT_SECRET on the API: keys cannot rotate.</p> : null}
      <Table<SigningKey>
        caption="Stored signing keys" rows={body?.data} rowKey={(k) => k.kid} empty="None: the configured AUTH_JWT_SECRET signs every token."
        columns={[
          { label: 'Key id', cell: (k) => <code>{k.kid}</code> },
          { label: 'Signs from', cell: (k) => (k.kid === 'bootstrap' ? '—' : <When at={k.activates_at} />) },
          { label: 'Verifies until', cell: (k) => (k.retires_at ? <When at={k.retires_at} /> : 'still signing') },
          { label: 'State', cell: (k) => (k.retired ? 'retired' : k.kid === body?.signing_kid ? 'signing' : k.retires_at ? 'verifying only' : 'starting') },
        ]}
      />
      <ActionButton
        label="Rotate signing key" danger confirm="Rotate the access-token signing key now?"
        run={() => api(`${PATH}/rotate`, { method: 'POST', body: {} })}
        done="Rotated: the new key signs within seconds." onDone={() => void keys.reload()}
      />
    </section>
  );
}
