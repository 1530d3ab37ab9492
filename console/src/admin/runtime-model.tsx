/**
 * Creating a runtime model (`POST /admin/routing/provider-route-models`) with its first route,
 * after an optional verification (`POST …/provider-route-model-verifications`, never saved). The
 * server's 400 lands on the field it names (`id`, `route.base_url`, …).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { inputProps, ROLES, type ProbeResult, ProbeNote } from './common';
import { RouteInputs, routeBody, useRouteInput, validateRoute } from './route-fields';

const FIELDS = ['id', 'name', 'required_role', 'route', 'route.base_url', 'route.provider', 'route.kind', 'route.api_key', 'route.provider_model_id', 'route.weight', 'router',
  'base_url', 'provider', 'kind', 'api_key', 'provider_model_id', 'weight'];

/** The form. */
export function RuntimeModelForm(props: { onCreated: () => void }): JSX.Element {
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState('admin');
  const route = useRouteInput();
  const [probe, setProbe] = useState<ProbeResult | undefined>(undefined);
  const form = useSubmit(FIELDS);
  const validate = (): FieldErrors => {
    const errors = validateRoute(route.value, 'route.', { needTarget: true, weight: true });
    if (!/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/.test(id.trim())) errors.id = 'Letters, digits and . _ : / @ - (at most 128), starting with a letter or digit.';
    return errors;
  };
  const body = (): Record<string, unknown> => ({ id: id.trim(), ...(name.trim() ? { name: name.trim() } : {}), required_role: role, route: routeBody(route.value, { weight: true }) });
  const verify = (): void => {
    setProbe(undefined);
    void form.submit(validate, async () => {
      setProbe(await api<ProbeResult>('/admin/routing/provider-route-model-verifications', { method: 'POST', body: body() }));
      return 'Verified (nothing saved).';
    });
  };
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(validate, async () => {
      await api('/admin/routing/provider-route-models', { method: 'POST', body: body() });
      route.reset();
      setId('');
      setName('');
      props.onCreated();
      return 'Model created.';
    });
  };
  return (
    <form onSubmit={onSubmit} noValidate aria-label="Create a runtime model">
      <Field label="Model id" name="rm-id" error={form.errors.id}><input {...inputProps('rm-id', form.errors.id)} value={id} onInput={(e) => setId(e.currentTarget.value)} /></Field>
      <Field label="Display name" name="rm-name" error={form.errors.name}><input {...inputProps('rm-name', form.errors.name)} value={name} onInput={(e) => setName(e.currentTarget.value)} /></Field>
      <Field label="Required role" name="rm-role" error={form.errors.required_role}>
        <select {...inputProps('rm-role', form.errors.required_role)} value={role} onChange={(e) => setRole(e.currentTarget.value)}>{ROLES.map((r) => <option key={r} value={r}>{r}</option>)}</select>
      </Field>
      <RouteInputs scope="rm" prefix="route." input={route} errors={form.errors} weight />
      {form.errors.route ? <p class="error" role="alert">{form.errors.route}</p> : null}
      <ProbeNote result={probe} />
      <div class="row"><button type="button" onClick={verify} disabled={form.busy}>Verify</button></div>
      <SubmitRow label="Create model" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}
