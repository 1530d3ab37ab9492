/**
 * Changing a model's routes: add a runtime route (`POST …/provider-route-candidates/{model}`,
 * verified first with `…-verifications`), change one (`PATCH`) or delete it (`DELETE`; the
 * server refuses the last route of a runtime model or the offload route, and the reason is
 * shown), retarget a file route (`PUT …/provider-routes/{model}/{route}`, verified with
 * `POST …/provider-route-verifications/…`) and remove that override (`DELETE`).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ActionButton } from '../ui/parts';
import { ProbeNote, seg, type ProbeResult, type RouteView } from './common';
import { RouteInputs, routeBody, useRouteInput, validateRoute } from './route-fields';

const FIELDS = ['base_url', 'provider', 'kind', 'api_key', 'provider_model_id', 'weight', 'route', 'route_id', 'body'];

type Mode = { kind: 'add' } | { kind: 'patch'; route: RouteView } | { kind: 'retarget'; route: RouteView };

function endpoints(modelId: string, mode: Mode): { save: string; method: string; verify: string } {
  const m = seg(modelId);
  if (mode.kind === 'add') return { save: `/admin/routing/provider-route-candidates/${m}`, method: 'POST', verify: `/admin/routing/provider-route-candidate-verifications/${m}` };
  if (mode.kind === 'patch') return { save: `/admin/routing/provider-route-candidates/${m}/${seg(mode.route.route_id)}`, method: 'PATCH', verify: `/admin/routing/provider-route-candidate-verifications/${m}` };
  return { save: `/admin/routing/provider-routes/${m}/${seg(mode.route.route_id)}`, method: 'PUT', verify: `/admin/routing/provider-route-verifications/${m}/${seg(mode.route.route_id)}` };
}

/** A route form in one of its three modes. */
export function RouteForm(props: { modelId: string; mode: Mode; onSaved: () => void }): JSX.Element {
  const route = useRouteInput();
  const [probe, setProbe] = useState<ProbeResult | undefined>(undefined);
  const form = useSubmit(FIELDS);
  const withWeight = props.mode.kind !== 'retarget';
  const scope = props.mode.kind === 'add' ? 'add-route' : `${props.mode.kind}-${props.mode.route.route_id}`;
  const urls = endpoints(props.modelId, props.mode);
  const validate = (): FieldErrors => {
    const errors = validateRoute(route.value, '', { needTarget: props.mode.kind === 'add', weight: withWeight });
    if (props.mode.kind === 'retarget' && Object.keys(routeBody(route.value, { weight: false })).length === 0) errors[''] = 'Change at least one of base URL, provider, kind, upstream model or key.';
    return errors;
  };
  const verify = (): void => {
    setProbe(undefined);
    void form.submit(validate, async () => {
      setProbe(await api<ProbeResult>(urls.verify, { method: 'POST', body: routeBody(route.value, { weight: withWeight && props.mode.kind !== 'patch' }) }));
      return 'Verified (nothing saved).';
    });
  };
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(validate, async () => {
      await api(urls.save, { method: urls.method, body: routeBody(route.value, { weight: withWeight }) });
      route.reset();
      props.onSaved();
      return props.mode.kind === 'add' ? 'Route added.' : 'Route saved.';
    });
  };
  const label = props.mode.kind === 'add' ? 'Add a runtime route' : props.mode.kind === 'patch' ? `Change runtime route ${props.mode.route.route_id}` : `Retarget ${props.mode.route.route_id}`;
  return (
    <form onSubmit={onSubmit} noValidate aria-label={label}>
      {props.mode.kind === 'retarget' ? <p class="hint">A retarget replaces the previous one: give every field that should differ from the file (an empty key keeps the saved key).</p> : null}
      <RouteInputs scope={scope} prefix="" input={route} errors={form.errors} weight={withWeight} keyHint={props.mode.kind === 'add' ? undefined : 'Write-only; leave empty to keep the saved key.'} />
      {form.errors.route || form.errors.route_id || form.errors.body ? <p class="error" role="alert">{form.errors.route ?? form.errors.route_id ?? form.errors.body}</p> : null}
      <ProbeNote result={probe} />
      <div class="row"><button type="button" onClick={verify} disabled={form.busy}>Verify</button></div>
      <SubmitRow label={props.mode.kind === 'add' ? 'Add route' : 'Save'} busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** The change actions of one route (by its source). */
export function RouteActions(props: { modelId: string; route: RouteView; onChanged: () => void }): JSX.Element {
  const [open, setOpen] = useState(false);
  // The "remove retarget" button goes away with the override, so its outcome is said here.
  const [note, setNote] = useState('');
  const r = props.route;
  const m = seg(props.modelId);
  return (
    <div>
      <div class="row">
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>{r.source === 'runtime' ? 'Change…' : 'Retarget…'}</button>
        {r.source === 'runtime' ? (
          <ActionButton label="Delete route" danger confirm={`Delete runtime route ${r.route_id}?`} done="Route deleted." run={() => api(`/admin/routing/provider-route-candidates/${m}/${seg(r.route_id)}`, { method: 'DELETE' })} onDone={props.onChanged} />
        ) : null}
        {r.source === 'override' ? (
          <ActionButton label="Remove retarget" done="Retarget removed." run={() => api(`/admin/routing/provider-routes/${m}/${seg(r.route_id)}`, { method: 'DELETE' })} onDone={() => { setNote('Retarget removed: the file definition applies again.'); props.onChanged(); }} />
        ) : null}
        {note && r.source === 'yaml' ? <span class="ok" role="status">{note}</span> : null}
      </div>
      {open ? <RouteForm modelId={props.modelId} mode={r.source === 'runtime' ? { kind: 'patch', route: r } : { kind: 'retarget', route: r }} onSaved={props.onChanged} /> : null}
    </div>
  );
}
