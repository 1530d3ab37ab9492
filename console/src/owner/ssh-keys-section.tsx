/**
 * The owner's SSH keys (`/v1/agent/ssh-keys`, docs/ssh.md "Keys") on the Security page: the list
 * (name, type, `SHA256:` fingerprint, when added and last used), adding one (a name and the pasted
 * `.pub` line; a refused key shows the API's reason under the field, word for word) and deleting
 * one after a confirmation.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, fieldProps, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ActionButton, ErrorNote, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

interface SshKey {
  id: string;
  name: string;
  key_type: string;
  fingerprint: string;
  created_at: string;
  last_used_at: string | null;
}

function AddKeyForm(props: { onAdded: () => void }): JSX.Element {
  const [name, setName] = useState('');
  const [publicKey, setPublicKey] = useState('');
  const form = useSubmit(['name', 'public_key']);
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(() => {
      const errors: FieldErrors = {};
      if (!publicKey.trim()) errors.public_key = 'Paste the public key: one line of a .pub file.';
      if (name.trim().length > 100) errors.name = `The name is ${name.trim().length} characters; at most 100.`;
      return errors;
    }, async () => {
      const body = name.trim() ? { name: name.trim(), public_key: publicKey.trim() } : { public_key: publicKey.trim() };
      const key = await api<SshKey>('/v1/agent/ssh-keys', { method: 'POST', body });
      setName('');
      setPublicKey('');
      props.onAdded();
      return `Key "${key.name}" added (${key.fingerprint}).`;
    });
  };
  return (
    <form class="ssh-key-form" onSubmit={onSubmit} noValidate aria-label="Add an SSH key">
      <Field label="Key name" name="name" error={form.errors.name} hint="Optional: the key's comment when left empty.">
        <input {...fieldProps('name', form.errors)} value={name} maxLength={100} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Public key" name="public_key" error={form.errors.public_key} hint="The .pub file's line, e.g. ssh-ed25519 AAAA… you@laptop. Ed25519, ECDSA or RSA of 3072 bits or more.">
        <textarea {...fieldProps('public_key', form.errors)} rows={3} value={publicKey} spellcheck={false} onInput={(e) => setPublicKey(e.currentTarget.value)} />
      </Field>
      <SubmitRow label="Add key" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** The "SSH keys" section. */
export function SshKeysSection(): JSX.Element {
  const list = useResource<{ keys: SshKey[]; max_keys: number }>('/v1/agent/ssh-keys');
  const reload = (): void => void list.reload();
  return (
    <section aria-labelledby="ssh-keys-heading">
      <h2 id="ssh-keys-heading">SSH keys</h2>
      <p class="muted">Keys that may open a shell in your chats' sandboxes (<code>ssh &lt;chat id&gt;@host</code>; the chat page shows the line). At most {list.data?.max_keys ?? 10}.</p>
      <ErrorNote error={list.error} what="Your SSH keys could not be read" />
      <Table<SshKey>
        caption="Your SSH keys" rows={list.data?.keys} rowKey={(k) => k.id} empty="No SSH key yet."
        columns={[
          { label: 'Name', cell: (k) => k.name },
          { label: 'Type', cell: (k) => k.key_type },
          { label: 'Fingerprint', cell: (k) => <code>{k.fingerprint}</code> },
          { label: 'Added', cell: (k) => <When at={k.created_at} /> },
          { label: 'Last used', cell: (k) => (k.last_used_at ? <When at={k.last_used_at} /> : <span class="muted">never</span>) },
          {
            label: 'Delete', cell: (k) => (
              <ActionButton label={`Delete ${k.name}`} danger confirm={`Delete the SSH key "${k.name}" (${k.fingerprint})? It will no longer open your sandboxes.`}
                run={() => api(`/v1/agent/ssh-keys/${encodeURIComponent(k.id)}`, { method: 'DELETE' })} done="Deleted." onDone={reload} />
            ),
          },
        ]}
      />
      <AddKeyForm onAdded={reload} />
    </section>
  );
}
