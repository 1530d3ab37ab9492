/**
 * Run activity (`GET /admin/agent/runs/<job>/activity`, docs/agent-event-stream.md): a chat's
 * event envelopes in order, without content, paged by `cursor`; and one event's content
 * (`POST …/events/<id>/content`), which the server records in the audit log before answering: the
 * page says so on the button and asks before opening. Links the chat's workflow in the Temporal UI.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError } from '../client';
import type { PageProps } from '../pages';
import { navigate } from '../router';
import { Field, fieldProps, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ActionButton, Badge, ErrorNote, Freshness, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { chatWorkflowId } from '../ui/temporal';
import { TemporalLink } from '../ui/temporal-link';

interface Envelope {
  event_id: string;
  turn_seq: number;
  attempt_id: string | null;
  seq: number;
  event_type: string;
  created_at: string;
  is_error: boolean;
  has_content: boolean;
  tool_name?: string;
}

interface ActivityPage { events: Envelope[]; next_cursor: string | null }

interface EventContent { payload: unknown; truncated: boolean; payload_bytes: number }

/** What the content button says before it is pressed: opening content is audited. */
export const CONTENT_AUDIT_NOTE = 'Opening an event\'s content is recorded in the agent audit log under your account (agent.run.event_content.read).';

function ContentCell(props: { jobId: string; event: Envelope }): JSX.Element {
  const [content, setContent] = useState<EventContent | undefined>(undefined);
  if (!props.event.has_content) return <span class="muted">no content</span>;
  if (content) {
    return (
      <details open>
        <summary>Content ({content.payload_bytes} bytes{content.truncated ? ', cut at 256 KiB' : ''})</summary>
        <pre>{typeof content.payload === 'string' ? content.payload : JSON.stringify(content.payload, null, 2)}</pre>
      </details>
    );
  }
  return (
    <ActionButton
      label="Open content (audited)"
      confirm={`${CONTENT_AUDIT_NOTE} Open the content of event ${props.event.event_id}?`}
      run={async () => setContent(await api<EventContent>(`/admin/agent/runs/${encodeURIComponent(props.jobId)}/events/${encodeURIComponent(props.event.event_id)}/content`, { method: 'POST', body: {} }))}
      done="Opened (audited)."
    />
  );
}

function Activity(props: { jobId: string }): JSX.Element {
  const first = useResource<ActivityPage>(`/admin/agent/runs/${encodeURIComponent(props.jobId)}/activity?limit=100`);
  const [more, setMore] = useState<{ events: Envelope[]; next: string | null } | undefined>(undefined);
  const [moreError, setMoreError] = useState<ApiError | undefined>(undefined);
  const events = [...(first.data?.events ?? []), ...(more?.events ?? [])];
  const next = more ? more.next : first.data?.next_cursor ?? null;
  const loadMore = async (): Promise<void> => {
    if (!next) return;
    try {
      const page = await api<ActivityPage>(`/admin/agent/runs/${encodeURIComponent(props.jobId)}/activity?limit=100&cursor=${encodeURIComponent(next)}`);
      setMore({ events: [...(more?.events ?? []), ...page.events], next: page.next_cursor });
      setMoreError(undefined);
    } catch (err) {
      setMoreError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    }
  };
  return (
    <>
      <p class="row"><span>Chat workflow:</span> <TemporalLink workflowId={chatWorkflowId(props.jobId)} label={chatWorkflowId(props.jobId)} /></p>
      <p class="muted">{CONTENT_AUDIT_NOTE}</p>
      <Freshness loading={first.loading} loadedAt={first.loadedAt} error={first.error} />
      {first.data ? null : <ErrorNote error={first.error} what="The activity could not be read" />}
      <Table<Envelope>
        caption={`Events of ${props.jobId}`}
        rows={first.data ? events : undefined}
        rowKey={(e) => e.event_id}
        empty="No event yet."
        columns={[
          { label: 'Event', cell: (e) => <code>{e.event_id}</code> },
          { label: 'Turn · attempt · seq', cell: (e) => <span>{e.turn_seq} · <code>{e.attempt_id ?? '–'}</code> · {e.seq}</span> },
          { label: 'Type', cell: (e) => <span>{e.event_type}{e.tool_name ? <> <code>{e.tool_name}</code></> : null}{e.is_error ? <> <Badge tone="bad">error</Badge></> : null}</span> },
          { label: 'At', cell: (e) => <When at={e.created_at} /> },
          { label: 'Content', cell: (e) => <ContentCell jobId={props.jobId} event={e} /> },
        ]}
      />
      <ErrorNote error={moreError} what="More events could not be read" />
      {next ? <button type="button" onClick={() => void loadMore()}>Load more events</button> : null}
    </>
  );
}

/** The run page: `/admin/agent/runs/:jobId`; without a job, a form asking for one. */
function RunsPage(props: PageProps): JSX.Element {
  const jobId = props.params.jobId;
  const [text, setText] = useState(jobId ?? '');
  const form = useSubmit(['job_id']);
  const open = (event: Event): void => {
    event.preventDefault();
    const id = text.trim();
    void form.submit(
      (): FieldErrors => (/^[A-Za-z0-9_-]{1,128}$/.test(id) ? {} : { job_id: 'Enter a chat id (job_…).' }),
      () => {
        navigate(`/admin/agent/runs/${encodeURIComponent(id)}`);
        return Promise.resolve('Showing its activity.');
      },
    );
  };
  return (
    <Page title={jobId ? `Run ${jobId}` : 'Run activity'}>
      <form onSubmit={open} noValidate>
        <Field label="Chat (job) id" name="job_id" error={form.errors.job_id} hint="A chat's id, as the sandbox inventory lists its chats">
          <input {...fieldProps('job_id', form.errors)} value={text} onInput={(e) => setText((e.currentTarget).value)} />
        </Field>
        <SubmitRow label="Show activity" busy={form.busy} errors={form.errors} />
      </form>
      {jobId ? <Activity key={jobId} jobId={jobId} /> : null}
    </Page>
  );
}

export { RunsPage };
