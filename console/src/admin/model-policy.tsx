/**
 * A model's routing policies: the strategy switch (`PATCH …/provider-route-strategies/{model}`,
 * fixed or routewise; "file default" removes the override) and the offload policy
 * (`GET/PUT/DELETE /admin/routing/offload-routes…`), shown with whether it is in force and, when
 * not, the server's reason.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit } from '../ui/form';
import { ActionButton, Badge, ErrorNote } from '../ui/parts';
import { useResource } from '../ui/resource';
import { inputProps, numberOf, seg, type ModelView } from './common';

/** The strategy switch. */
export function StrategyForm(props: { model: ModelView; onChanged: () => void }): JSX.Element {
  const [choice, setChoice] = useState(props.model.router === 'routewise' ? 'routewise' : 'fixed');
  useEffect(() => setChoice(props.model.router === 'routewise' ? 'routewise' : 'fixed'), [props.model.router]);
  const form = useSubmit(['router']);
  const send = (router: string | null): Promise<boolean> => form.submit(() => ({}), async () => {
    await api(`/admin/routing/provider-route-strategies/${seg(props.model.id)}`, { method: 'PATCH', body: { router } });
    props.onChanged();
    return router === null ? 'Override removed: the file strategy applies.' : `Strategy set to ${router}.`;
  });
  return (
    <form onSubmit={(e) => { e.preventDefault(); void send(choice); }} noValidate aria-label="Strategy">
      <p>Current strategy: <strong>{props.model.router}</strong></p>
      <Field label="Strategy" name="strategy" error={form.errors.router}>
        <select {...inputProps('strategy', form.errors.router)} value={choice} onChange={(e) => setChoice(e.currentTarget.value)}>
          <option value="fixed">fixed (weights)</option>
          <option value="routewise">routewise (cost-aware)</option>
        </select>
      </Field>
      <div class="row"><button type="button" onClick={() => void send(null)} disabled={form.busy}>Use the file's strategy</button></div>
      <SubmitRow label="Set strategy" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

interface OffloadView {
  model_id: string;
  route_id: string;
  wait_seconds: number;
  engine_queue_limit: number | null;
  max_input_tokens: number | null;
  active: boolean;
  inactive_reason: string | null;
}

/** The offload policy of a model: its state and a form to set or clear it. */
export function OffloadPanel(props: { model: ModelView }): JSX.Element {
  const listing = useResource<{ offload_routes: OffloadView[] }>('/admin/routing/offload-routes');
  const current = listing.data?.offload_routes.find((o) => o.model_id === props.model.id);
  // Whether a policy is in force depends on the routes' weights: re-read it when they change.
  const weights = JSON.stringify(props.model.routes.map((r) => [r.route_id, r.effective_weight]));
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else void listing.reload();
  }, [weights]);
  const [routeId, setRouteId] = useState('');
  const [wait, setWait] = useState('');
  const [queue, setQueue] = useState('');
  const [tokens, setTokens] = useState('');
  const form = useSubmit(['model_id', 'route_id', 'wait_seconds', 'engine_queue_limit', 'max_input_tokens']);
  const path = `/admin/routing/offload-routes/${seg(props.model.id)}`;
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(
      () => {
        const errors: Record<string, string> = {};
        if (!routeId) errors.route_id = 'Choose the route to offload to.';
        const w = numberOf(wait);
        if (w === undefined || w <= 0) errors.wait_seconds = 'A wait in seconds, more than 0.';
        for (const [key, text] of [['engine_queue_limit', queue], ['max_input_tokens', tokens]] as const) {
          const n = numberOf(text);
          if (text.trim() && (n === undefined || !Number.isInteger(n) || n <= 0)) errors[key] = 'A whole number of 1 or more, or empty.';
        }
        return errors;
      },
      async () => {
        const body: Record<string, unknown> = { route_id: routeId, wait_seconds: numberOf(wait) };
        if (queue.trim()) body.engine_queue_limit = numberOf(queue);
        if (tokens.trim()) body.max_input_tokens = numberOf(tokens);
        await api(path, { method: 'PUT', body });
        await listing.reload();
        return 'Offload policy saved.';
      },
    );
  };
  return (
    <div>
      <ErrorNote error={listing.error} what="The offload policies could not be read" />
      {current ? (
        <p role="status">
          Offload to <code>{current.route_id}</code> after {current.wait_seconds} s
          {current.engine_queue_limit !== null ? `, engine queue over ${current.engine_queue_limit}` : ''}
          {current.max_input_tokens !== null ? `, inputs up to ${current.max_input_tokens} tokens` : ''}:{' '}
          {current.active ? <Badge tone="ok">active</Badge> : <Badge tone="warn">inactive</Badge>}
          {current.inactive_reason ? <span> {current.inactive_reason}</span> : null}{' '}
          <ActionButton label="Clear offload policy" done="Offload policy cleared." run={() => api(path, { method: 'DELETE' })} onDone={() => void listing.reload()} />
        </p>
      ) : listing.data ? <p class="muted">No offload policy.</p> : null}
      <form onSubmit={onSubmit} noValidate aria-label="Offload policy">
        <Field label="Offload route" name="offload-route" error={form.errors.route_id ?? form.errors.model_id}>
          <select {...inputProps('offload-route', form.errors.route_id ?? form.errors.model_id)} value={routeId} onChange={(e) => setRouteId(e.currentTarget.value)}>
            <option value="">Choose…</option>
            {props.model.routes.map((r) => <option key={r.route_id} value={r.route_id}>{r.route_id} ({r.provider})</option>)}
          </select>
        </Field>
        <Field label="Wait before offloading (seconds)" name="offload-wait" error={form.errors.wait_seconds}>
          <input {...inputProps('offload-wait', form.errors.wait_seconds)} inputMode="decimal" value={wait} onInput={(e) => setWait(e.currentTarget.value)} />
        </Field>
        <Field label="Engine queue limit (optional)" name="offload-queue" error={form.errors.engine_queue_limit}>
          <input {...inputProps('offload-queue', form.errors.engine_queue_limit)} inputMode="numeric" value={queue} onInput={(e) => setQueue(e.currentTarget.value)} />
        </Field>
        <Field label="Largest input in tokens (optional)" name="offload-tokens" error={form.errors.max_input_tokens}>
          <input {...inputProps('offload-tokens', form.errors.max_input_tokens)} inputMode="numeric" value={tokens} onInput={(e) => setTokens(e.currentTarget.value)} />
        </Field>
        <SubmitRow label="Save offload policy" busy={form.busy} errors={form.errors} done={form.done} />
      </form>
    </div>
  );
}
