/**
 * The playground (`POST /admin/playground/chat`, docs/inference-surfaces.md "Playground"): send a
 * prompt to a model, or to one pinned route of it, through the chat path, and read the answer with
 * the routing attribution clients never see (answering route, fallback, failed attempts, offload).
 * A failed call shows the error with the same attribution. The call is sent with `fetch` rather
 * than `api`: an upstream's 502/503 here is the answer being studied, not the console's server
 * being unreachable.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { accessToken } from '../client';
import { ErrorNote, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { Field, fieldProps, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import type { RoutingListing } from './common';

interface Attempt { endpoint_id: string; provider: string; status: number; upstream_status?: number; error_class: string; message: string }
interface Attribution { model: string | null; provider: string | null; endpoint_id: string | null; fallback: boolean; failed_attempts: Attempt[]; offload: unknown }
interface Outcome { status: number; answer?: string; error?: string; routing?: Attribution }

async function play(model: string, prompt: string, endpoint: string): Promise<Outcome> {
  const token = accessToken();
  const res = await fetch('/admin/playground/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: prompt }], ...(endpoint ? { pin: { endpoint_id: endpoint } } : {}) }),
  });
  const body = (await res.json()) as { completion?: { choices?: Array<{ message?: { content?: unknown } }> }; routing?: Attribution; error?: { message: string } };
  const content = body.completion?.choices?.[0]?.message?.content;
  return { status: res.status, answer: typeof content === 'string' ? content : undefined, error: body.error?.message, routing: body.routing };
}

function RoutingResult(props: { outcome: Outcome }): JSX.Element {
  const { outcome } = props;
  const r = outcome.routing;
  return (
    <section aria-label="Playground result">
      {outcome.error ? <p class="error">{outcome.status}: {outcome.error}</p> : <pre class="answer">{outcome.answer ?? ''}</pre>}
      {r ? (
        <dl>
          <dt>Answered by</dt><dd>{r.provider ? <>{r.provider} <code>{r.endpoint_id}</code></> : 'no route'}</dd>
          <dt>Fallback</dt><dd>{r.fallback ? 'yes' : 'no'}</dd>
          <dt>Offload</dt><dd>{r.offload ? <code>{JSON.stringify(r.offload)}</code> : 'no'}</dd>
        </dl>
      ) : null}
      <Table<Attempt>
        caption="Failed attempts"
        rows={r?.failed_attempts ?? []}
        rowKey={(a) => `${a.endpoint_id}-${a.message}`}
        empty="No attempt failed."
        columns={[
          { label: 'Provider', cell: (a) => a.provider },
          { label: 'Endpoint', cell: (a) => <code>{a.endpoint_id}</code> },
          { label: 'Upstream status', cell: (a) => a.upstream_status ?? '—' },
          { label: 'Error class', cell: (a) => a.error_class },
          { label: 'Message', cell: (a) => a.message },
        ]}
      />
    </section>
  );
}

/** `/admin/playground`. */
export function PlaygroundPage(): JSX.Element {
  const listing = useResource<RoutingListing>('/admin/routing');
  const models = (listing.data?.models ?? []).filter((m) => m.model_type !== 'embedding');
  const [model, setModel] = useState('');
  const [endpoint, setEndpoint] = useState('');
  const [prompt, setPrompt] = useState('');
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const form = useSubmit(['model', 'pin', 'messages']);
  const chosen = models.find((m) => m.id === model);
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    const check = (): FieldErrors => {
      if (!model) return { model: 'Choose a model' };
      return prompt.trim() ? {} : { messages: 'Write a prompt' };
    };
    void form.submit(check, async () => {
      const result = await play(model, prompt, endpoint);
      setOutcome(result);
      return result.error ? 'Answered with an error (below).' : 'Answered.';
    });
  };
  return (
    <Page title="Playground">
      <p class="muted">Sends a prompt through the chat path as the gateway routes it, and shows which route answered and what failed before it.</p>
      <ErrorNote error={listing.data ? undefined : listing.error} what="The models could not be read" />
      <form aria-label="Playground" onSubmit={onSubmit}>
        <Field label="Model" name="model" error={form.errors.model}>
          <select {...fieldProps('model', form.errors)} value={model} onChange={(e) => { setModel(e.currentTarget.value); setEndpoint(''); }}>
            <option value="">Choose a model</option>
            {models.map((m) => <option key={m.id} value={m.id}>{m.id}</option>)}
          </select>
        </Field>
        <Field label="Route" name="pin" error={form.errors.pin} hint="A pinned route answers alone, without fallback.">
          <select {...fieldProps('pin', form.errors)} value={endpoint} onChange={(e) => setEndpoint(e.currentTarget.value)}>
            <option value="">Any (the gateway's routing)</option>
            {(chosen?.routes ?? []).map((r) => <option key={r.endpoint_id} value={r.endpoint_id}>{r.route_id} · {r.provider}</option>)}
          </select>
        </Field>
        <Field label="Prompt" name="messages" error={form.errors.messages}>
          <textarea {...fieldProps('messages', form.errors)} rows={4} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
        </Field>
        <SubmitRow label="Send" busy={form.busy} errors={form.errors} done={form.done} />
      </form>
      {outcome ? <RoutingResult outcome={outcome} /> : null}
    </Page>
  );
}
