/**
 * Providers (`/admin/providers`): every provider label with its routes and the rotation switch
 * (`PATCH /admin/providers/{p}/disabled`, with an optional reason); the custom provider
 * definitions (`/admin/provider-definitions`: add after an optional verification, delete; the
 * server refuses deleting one still used and says why). Keys are on the keys page.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit } from '../ui/form';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { inputProps, KeyView, ProbeNote, seg, type ProbeResult } from './common';

interface Routable { provider: string; custom: boolean; disabled: boolean; reason: string | null; routes: number; routable_routes: number; models: string[] }
interface Definition { slug: string; display_name: string; kind: string; base_url: string; key: { prefix: string; fingerprint: string } | null }

function Rotation(props: { p: Routable; onChanged: () => void }): JSX.Element {
  const [reason, setReason] = useState('');
  const path = `/admin/providers/${seg(props.p.provider)}/disabled`;
  if (props.p.disabled) {
    return <ActionButton label="Put back in rotation" done="Back in rotation." run={() => api(path, { method: 'PATCH', body: { disabled: false } })} onDone={props.onChanged} />;
  }
  return (
    <span class="row">
      <input aria-label={`Reason to take ${props.p.provider} out of rotation`} placeholder="reason (optional)" value={reason} maxLength={500} onInput={(e) => setReason(e.currentTarget.value)} />
      <ActionButton label="Take out of rotation" danger done="Out of rotation." run={() => api(path, { method: 'PATCH', body: { disabled: true, ...(reason.trim() ? { reason: reason.trim() } : {}) } })} onDone={props.onChanged} />
    </span>
  );
}

function DefinitionForm(props: { onSaved: () => void }): JSX.Element {
  const [v, setV] = useState({ slug: '', display_name: '', base_url: '', kind: '', api_key: '' });
  const [probe, setProbe] = useState<ProbeResult | undefined>(undefined);
  const form = useSubmit(['slug', 'display_name', 'base_url', 'kind', 'api_key']);
  const set = (patch: Partial<typeof v>): void => setV((x) => ({ ...x, ...patch }));
  const validate = (needSlug: boolean): Record<string, string> => {
    const errors: Record<string, string> = {};
    if ((needSlug || v.slug) && !/^[a-z0-9_-]{1,64}$/.test(v.slug)) errors.slug = 'Lowercase letters, digits, - and _ (at most 64).';
    if (!/^https?:\/\/[^\s/]+/.test(v.base_url.trim())) errors.base_url = 'Enter an http(s) URL.';
    return errors;
  };
  const body = (): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [k, x] of Object.entries(v)) if (x.trim() !== '') out[k] = k === 'api_key' ? x : x.trim();
    return out;
  };
  const verify = (): void => {
    setProbe(undefined);
    void form.submit(() => validate(false), async () => {
      setProbe(await api<ProbeResult>('/admin/provider-definitions/verify', { method: 'POST', body: body() }));
      return 'Verified (nothing saved).';
    });
  };
  const field = (name: keyof typeof v, label: string, secret = false, hint?: string): JSX.Element => (
    <Field label={label} name={`pd-${name}`} error={form.errors[name]} hint={hint}>
      {secret
        ? <input {...inputProps(`pd-${name}`, form.errors[name])} type="password" autocomplete="off" value={v[name]} onInput={(e) => set({ [name]: e.currentTarget.value })} />
        : <input {...inputProps(`pd-${name}`, form.errors[name])} autocomplete="off" value={v[name]} onInput={(e) => set({ [name]: e.currentTarget.value })} />}
    </Field>
  );
  return (
    <form noValidate aria-label="Add a provider" onSubmit={(e) => {
      e.preventDefault();
      void form.submit(() => validate(true), async () => {
        await api('/admin/provider-definitions', { method: 'POST', body: body() });
        setV({ slug: '', display_name: '', base_url: '', kind: '', api_key: '' });
        props.onSaved();
        return 'Provider added.';
      });
    }}>
      {field('slug', 'Slug')}
      {field('display_name', 'Display name')}
      {field('base_url', 'Base URL')}
      {field('kind', 'Adapter kind', false, 'A generic-compatible kind; empty: generic_compat.')}
      {field('api_key', 'API key', true, 'Write-only: it is never shown again.')}
      <ProbeNote result={probe} />
      <div class="row"><button type="button" onClick={verify} disabled={form.busy}>Verify</button></div>
      <SubmitRow label="Add provider" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** `/admin/providers`. */
export function ProvidersPage(): JSX.Element {
  const routable = useResource<{ providers: Routable[] }>('/admin/providers/routable', { refreshMs: 10_000 });
  const defs = useResource<{ providers: Definition[] }>('/admin/provider-definitions');
  const reload = (): void => { void routable.reload(); void defs.reload(); };
  return (
    <Page title="Providers">
      <Freshness loading={routable.loading} loadedAt={routable.loadedAt} error={routable.error} />
      <ErrorNote error={routable.data ? undefined : routable.error} what="The providers could not be read" />
      <Table<Routable>
        caption="Providers and rotation"
        rows={routable.data?.providers}
        rowKey={(p) => p.provider}
        columns={[
          { label: 'Provider', cell: (p) => <>{p.provider} {p.custom ? <Badge tone="info">custom</Badge> : null}</> },
          { label: 'State', cell: (p) => p.disabled ? <><Badge tone="warn">out of rotation</Badge> {p.reason ?? ''}</> : <Badge tone="ok">in rotation</Badge> },
          { label: 'Routes (taking traffic)', cell: (p) => `${p.routes} (${p.routable_routes})` },
          { label: 'Models', cell: (p) => p.models.join(', ') || <span class="muted">none</span> },
          { label: 'Rotation', cell: (p) => <Rotation p={p} onChanged={reload} /> },
        ]}
      />
      <ErrorNote error={defs.error} what="The custom providers could not be read" />
      <Table<Definition>
        caption="Custom provider definitions"
        rows={defs.data?.providers}
        rowKey={(d) => d.slug}
        empty="No custom providers."
        columns={[
          { label: 'Slug', cell: (d) => d.slug },
          { label: 'Name', cell: (d) => d.display_name },
          { label: 'Kind', cell: (d) => d.kind },
          { label: 'Base URL', cell: (d) => d.base_url },
          { label: 'Key', cell: (d) => d.key ? <KeyView {...d.key} /> : <span class="muted">none</span> },
          { label: 'Actions', cell: (d) => <ActionButton label="Delete" danger confirm={`Delete provider ${d.slug}?`} done="Deleted." run={() => api(`/admin/provider-definitions/${seg(d.slug)}`, { method: 'DELETE' })} onDone={reload} /> },
        ]}
      />
      <h2>Add a provider</h2>
      <DefinitionForm onSaved={reload} />
    </Page>
  );
}
