/**
 * Provider keys (`/admin/keys`): keys added at runtime (`/admin/provider-keys`: disable, enable,
 * delete, minimum role) and the keys of the files (`disable-env`, `enable-env`, `min-role-env`
 * by fingerprint), and adding a key after an optional verification. A key value is write-only:
 * the server answers prefix and fingerprint only, and the input is emptied once saved.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit } from '../ui/form';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { inputProps, KeyView, ProbeNote, ROLES, type ProbeResult } from './common';

interface AddedKey { id: string; provider: string; label: string | null; prefix: string; fingerprint: string; min_role: string | null; disabled: boolean }
interface EnvKey { provider: string; prefix: string; fingerprint: string; disabled: boolean; min_role: string | null }

function MinRole(props: { label: string; value: string | null; set: (role: string | null) => Promise<unknown>; onDone: () => void }): JSX.Element {
  const [role, setRole] = useState(props.value ?? '');
  useEffect(() => setRole(props.value ?? ''), [props.value]);
  return (
    <span class="row">
      <select aria-label={props.label} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
        <option value="">any role</option>
        {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
      </select>
      <ActionButton label="Set" done="Minimum role saved." run={() => props.set(role || null)} onDone={props.onDone} />
    </span>
  );
}

function AddKeyForm(props: { providers: string[]; onSaved: () => void }): JSX.Element {
  const [provider, setProvider] = useState('');
  const [key, setKey] = useState('');
  const [label, setLabel] = useState('');
  const [minRole, setMinRole] = useState('');
  const [probe, setProbe] = useState<ProbeResult | undefined>(undefined);
  const form = useSubmit(['provider', 'api_key', 'label', 'min_role']);
  const validate = (): Record<string, string> => {
    const errors: Record<string, string> = {};
    if (!provider) errors.provider = 'Choose the provider this key is for.';
    if (key.length < 8) errors.api_key = 'A key has at least 8 characters.';
    return errors;
  };
  const verify = (): void => {
    setProbe(undefined);
    void form.submit(validate, async () => {
      setProbe(await api<ProbeResult>('/admin/provider-keys/verify', { method: 'POST', body: { provider, api_key: key } }));
      return 'Verified (nothing saved).';
    });
  };
  return (
    <form noValidate aria-label="Add a provider key" onSubmit={(e) => {
      e.preventDefault();
      void form.submit(validate, async () => {
        const saved = await api<AddedKey>('/admin/provider-keys', { method: 'POST', body: { provider, api_key: key, ...(label.trim() ? { label: label.trim() } : {}), min_role: minRole || null } });
        setKey('');
        setLabel('');
        setProbe(undefined);
        props.onSaved();
        return `Key added (${saved.prefix}…, fingerprint ${saved.fingerprint}).`;
      });
    }}>
      <Field label="Provider" name="key-provider" error={form.errors.provider}>
        <select {...inputProps('key-provider', form.errors.provider)} value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
          <option value="">Choose…</option>
          {props.providers.map((p) => <option key={p} value={p}>{p}</option>)}
        </select>
      </Field>
      <Field label="API key" name="key-value" error={form.errors.api_key} hint="Write-only: only its prefix and fingerprint are shown afterwards.">
        <input {...inputProps('key-value', form.errors.api_key)} type="password" autocomplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      </Field>
      <Field label="Label" name="key-label" error={form.errors.label}>
        <input {...inputProps('key-label', form.errors.label)} value={label} maxLength={200} onInput={(e) => setLabel(e.currentTarget.value)} />
      </Field>
      <Field label="Minimum role" name="key-min-role" error={form.errors.min_role}>
        <select {...inputProps('key-min-role', form.errors.min_role)} value={minRole} onChange={(e) => setMinRole(e.currentTarget.value)}>
          <option value="">any role</option>
          {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </Field>
      <ProbeNote result={probe} />
      <div class="row"><button type="button" onClick={verify} disabled={form.busy}>Verify</button></div>
      <SubmitRow label="Add key" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** `/admin/keys`. */
export function KeysPage(): JSX.Element {
  const keys = useResource<{ keys: AddedKey[]; env_keys: EnvKey[] }>('/admin/provider-keys');
  const providers = useResource<{ providers: Array<{ provider: string }> }>('/admin/providers/routable');
  const reload = (): void => void keys.reload();
  const state = (disabled: boolean): JSX.Element => disabled ? <Badge tone="warn">disabled</Badge> : <Badge tone="ok">in use</Badge>;
  return (
    <Page title="Provider keys">
      <Freshness loading={keys.loading} loadedAt={keys.loadedAt} error={keys.error} />
      <ErrorNote error={keys.data ? undefined : keys.error} what="The keys could not be read" />
      <Table<AddedKey>
        caption="Keys added at runtime"
        rows={keys.data?.keys}
        rowKey={(k) => k.id}
        empty="No keys were added."
        columns={[
          { label: 'Provider', cell: (k) => k.provider },
          { label: 'Key', cell: (k) => <KeyView prefix={k.prefix} fingerprint={k.fingerprint} /> },
          { label: 'Label', cell: (k) => k.label ?? '' },
          { label: 'State', cell: (k) => state(k.disabled) },
          { label: 'Minimum role', cell: (k) => <MinRole label={`Minimum role of key ${k.fingerprint}`} value={k.min_role} set={(min_role) => api(`/admin/provider-keys/${k.id}/min-role`, { method: 'POST', body: { min_role } })} onDone={reload} /> },
          { label: 'Actions', cell: (k) => <>
            <ActionButton label={k.disabled ? 'Enable' : 'Disable'} done="Saved." run={() => api(`/admin/provider-keys/${k.id}/${k.disabled ? 'enable' : 'disable'}`, { method: 'POST' })} onDone={reload} />
            <ActionButton label="Delete" danger confirm={`Delete key ${k.fingerprint}?`} done="Deleted." run={() => api(`/admin/provider-keys/${k.id}`, { method: 'DELETE' })} onDone={reload} />
          </> },
        ]}
      />
      <Table<EnvKey>
        caption="Keys from the configuration files"
        rows={keys.data?.env_keys}
        rowKey={(k) => `${k.provider}/${k.fingerprint}`}
        empty="No keys in the files."
        columns={[
          { label: 'Provider', cell: (k) => k.provider },
          { label: 'Key', cell: (k) => <KeyView prefix={k.prefix} fingerprint={k.fingerprint} /> },
          { label: 'State', cell: (k) => state(k.disabled) },
          { label: 'Minimum role', cell: (k) => <MinRole label={`Minimum role of file key ${k.fingerprint}`} value={k.min_role} set={(min_role) => api('/admin/provider-keys/min-role-env', { method: 'POST', body: { provider: k.provider, fingerprint: k.fingerprint, min_role } })} onDone={reload} /> },
          { label: 'Actions', cell: (k) => <ActionButton label={k.disabled ? 'Enable' : 'Disable'} done="Saved." run={() => api(`/admin/provider-keys/${k.disabled ? 'enable-env' : 'disable-env'}`, { method: 'POST', body: { provider: k.provider, fingerprint: k.fingerprint } })} onDone={reload} /> },
        ]}
      />
      <h2>Add a key</h2>
      <AddKeyForm providers={(providers.data?.providers ?? []).map((p) => p.provider)} onSaved={reload} />
    </Page>
  );
}
