/**
 * Recent requests (`/admin/requests`): the offloads of the request log
 * (`GET /admin/recent-requests/offloads` with the filters days, model, type, user_id,
 * session_id), and clearing recent error rows (`POST /admin/recent-requests/clear-errors`,
 * optionally of one model; the hourly aggregates are kept).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../client';
import { Field, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ErrorNote, Freshness, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { inputProps } from './common';

interface Offloads {
  days: number;
  total_requests: number;
  offloaded_requests: number;
  share: number;
  offloads: Array<{ model: string | null; route: string | null; reason: string; requests: number; failures: number; share: number }>;
}

const TYPES = ['chat', 'completions', 'responses', 'embeddings', 'messages'] as const;
type FilterName = 'days' | 'model' | 'type' | 'user_id' | 'session_id';
type Filters = Record<FilterName, string>;

const pct = (share: number): string => `${(share * 100).toFixed(1)} %`;

function ClearErrors(props: { onDone: () => void }): JSX.Element {
  const [days, setDays] = useState('1');
  const [model, setModel] = useState('');
  const form = useSubmit(['days', 'model']);
  return (
    <form noValidate aria-label="Clear recent errors" onSubmit={(e) => {
      e.preventDefault();
      void form.submit(
        (): FieldErrors => (/^\d+$/.test(days) && Number(days) >= 1 && Number(days) <= 90 ? {} : { days: 'A whole number of days from 1 to 90.' }),
        async () => {
          if (!window.confirm(`Delete the error rows of the last ${days} day(s)${model.trim() ? ` of ${model.trim()}` : ''}?`)) return 'Nothing deleted.';
          const out = await api<{ deleted: number }>('/admin/recent-requests/clear-errors', { method: 'POST', body: { days: Number(days), ...(model.trim() ? { model: model.trim() } : {}) } });
          props.onDone();
          return `${out.deleted} error rows deleted.`;
        },
      );
    }}>
      <Field label="Days" name="clear-days" error={form.errors.days}><input {...inputProps('clear-days', form.errors.days)} inputMode="numeric" value={days} onInput={(e) => setDays(e.currentTarget.value)} /></Field>
      <Field label="Model (optional)" name="clear-model" error={form.errors.model}><input {...inputProps('clear-model', form.errors.model)} value={model} onInput={(e) => setModel(e.currentTarget.value)} /></Field>
      <SubmitRow label="Clear errors" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** `/admin/requests`. */
export function RequestsPage(): JSX.Element {
  const [draft, setDraft] = useState<Filters>({ days: '1', model: '', type: '', user_id: '', session_id: '' });
  const [applied, setApplied] = useState<Filters>(draft);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const query = new URLSearchParams(Object.entries(applied).filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, v.trim()])).toString();
  const data = useResource<Offloads>(`/admin/recent-requests/offloads?${query}`, { refreshMs: 10_000 });
  const serverParam = data.error?.param;
  const apply = (event: Event): void => {
    event.preventDefault();
    const found: Record<string, string> = {};
    if (!/^\d+$/.test(draft.days) || Number(draft.days) < 1 || Number(draft.days) > 90) found.days = 'A whole number of days from 1 to 90.';
    if (draft.user_id.trim() && !/^[1-9]\d*$/.test(draft.user_id.trim())) found.user_id = 'A user id (a positive whole number).';
    setErrors(found);
    if (!Object.keys(found).length) setApplied(draft);
  };
  const err = (name: string): string | undefined => errors[name] ?? (serverParam === name ? data.error?.message : undefined);
  const input = (name: FilterName, label: string): JSX.Element => (
    <Field label={label} name={`filter-${name}`} error={err(name)}>
      <input {...inputProps(`filter-${name}`, err(name))} value={draft[name]} onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })} />
    </Field>
  );
  const d = data.data;
  return (
    <Page title="Recent requests">
      <form noValidate aria-label="Filters" onSubmit={apply} class="filters">
        {input('days', 'Days')}
        {input('model', 'Model')}
        <Field label="Type" name="filter-type" error={err('type')}>
          <select {...inputProps('filter-type', err('type'))} value={draft.type} onChange={(e) => setDraft({ ...draft, type: e.currentTarget.value })}>
            <option value="">any</option>
            {TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </Field>
        {input('user_id', 'User id')}
        {input('session_id', 'Session id')}
        <button type="submit">Apply filters</button>
      </form>
      <Freshness loading={data.loading} loadedAt={data.loadedAt} error={data.error} />
      <ErrorNote error={serverParam ? undefined : data.error} what="The offloads could not be read" />
      {d ? <p role="status">{d.total_requests} requests in {d.days} day(s); {d.offloaded_requests} offloaded ({pct(d.share)}).</p> : null}
      <Table
        caption="Offloaded requests by model, offload route and reason"
        rows={d?.offloads}
        rowKey={(o) => `${o.model}/${o.route}/${o.reason}`}
        empty="No offloads in this window."
        columns={[
          { label: 'Model', cell: (o) => o.model ?? '–' },
          { label: 'Offload route', cell: (o) => o.route ?? '–' },
          { label: 'Reason', cell: (o) => o.reason },
          { label: 'Requests', cell: (o) => o.requests },
          { label: 'Failed', cell: (o) => o.failures },
          { label: 'Share of the model', cell: (o) => pct(o.share) },
        ]}
      />
      <h2>Clear recent errors</h2>
      <ClearErrors onDone={() => void data.reload()} />
    </Page>
  );
}
