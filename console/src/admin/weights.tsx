/**
 * One route's weight (`GET /admin/routing/weights/{model}/{endpoint}`): the file's weight, the
 * admin override and the effective weight with the reasons it differs; setting an override
 * (`PUT`, weight ≥ 0; 0 takes the endpoint out of traffic at once) and removing it (`DELETE`).
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ActionButton, Badge, ErrorNote } from '../ui/parts';
import { useResource } from '../ui/resource';
import { inputProps, numberOf, seg } from './common';

/** `GET /admin/routing/weights/…`. */
export interface WeightView {
  model_id: string;
  endpoint_id: string;
  route_id: string;
  source: string;
  yaml_weight: number;
  override: number | null;
  effective: number;
  reasons: string[];
}

/** The weight panel of one endpoint of a model; `onChanged` reloads the page's listing, `version` follows it. */
export function WeightEditor(props: { modelId: string; endpointId: string; version: string; onChanged: () => void }): JSX.Element {
  const path = `/admin/routing/weights/${seg(props.modelId)}/${seg(props.endpointId)}`;
  const view = useResource<WeightView>(path);
  // `version` (the listing's override/effective/reasons of this route) changes when anyone changes the weight: read it again.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else void view.reload();
  }, [props.version]);
  const [text, setText] = useState('');
  const form = useSubmit(['weight']);
  const scope = `weight-${props.endpointId}`;
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(
      (): FieldErrors => {
        const n = numberOf(text);
        return n === undefined || n < 0 ? { weight: 'Enter a weight of 0 or more (0 takes this endpoint out of traffic).' } : {};
      },
      async () => {
        await api(path, { method: 'PUT', body: { weight: numberOf(text) } });
        setText('');
        await view.reload();
        props.onChanged();
        return 'Weight override saved.';
      },
    );
  };
  const w = view.data;
  return (
    <div class="card">
      <ErrorNote error={view.error} what="The weight could not be read" />
      {w ? (
        <dl class="facts">
          <dt>File weight</dt><dd>{w.yaml_weight}</dd>
          <dt>Override</dt><dd>{w.override ?? <span class="muted">none</span>}</dd>
          <dt>Effective</dt><dd>{w.effective} {w.effective === 0 ? <Badge tone="warn">no traffic</Badge> : null}</dd>
          {w.reasons.length ? <><dt>Reasons</dt><dd>{w.reasons.join('; ')}</dd></> : null}
        </dl>
      ) : null}
      <form onSubmit={onSubmit} noValidate aria-label={`Weight of ${props.endpointId}`}>
        <Field label={`Weight override of ${props.endpointId}`} name={scope} error={form.errors.weight}>
          <input {...inputProps(scope, form.errors.weight)} inputMode="decimal" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder={w ? String(w.effective) : ''} />
        </Field>
        <SubmitRow label="Save override" busy={form.busy} errors={form.errors} done={form.done} />
      </form>
      {w && w.override !== null ? (
        <ActionButton label="Remove override" done="Override removed: the file weight applies." run={() => api(path, { method: 'DELETE' })} onDone={() => { void view.reload(); props.onChanged(); }} />
      ) : null}
    </div>
  );
}
