/**
 * One chat: its state, turns and live events. The job view (`GET /v1/agent/jobs/{job_id}`) is read
 * every 10 s and again at each turn event; the events come over SSE (./chat-events.ts) and are
 * folded for reading (./fold-events.ts). Native questions are answered in place, the running or
 * queued turn can be cancelled, follow-up turns are sent from the composer at the bottom, a
 * completed turn can be forked into a new chat ("Fork from here" in the turns table), and the
 * workspace can be downloaded; the SSH line (./ssh-line.tsx) shows how to open a shell in the sandbox.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../client';
import { navigate } from '../router';
import type { PageProps } from '../pages';
import { Field, fieldProps, SubmitRow, useSubmit, type FieldErrors } from '../ui/form';
import { ActionButton, ErrorNote, Freshness, Link, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { useChatEvents, type StreamState } from './chat-events';
import { ChatState, isActive, TurnBadge } from './chat-state';
import { EventItem, ToolItem } from './event-items';
import { foldEvents, textOf } from './fold-events';
import { QuestionCard } from './question-card';
import type { JobView, QuestionRecord, TurnView } from './types';
import { SshLine } from './ssh-line';
import { WorkspaceDownload } from './workspace-download';

const STREAM_LABEL: Record<StreamState, string> = {
  connecting: 'Connecting to the event stream…',
  live: 'Live',
  reconnecting: 'Reconnecting to the event stream…',
  ended: 'Nothing running: the stream reopens with the next turn',
  failed: 'The event stream was refused',
};

function Composer(props: { jobId: string; onSent: () => void }): JSX.Element {
  const [prompt, setPrompt] = useState('');
  const form = useSubmit(['prompt']);
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void form.submit(() => {
      const text = prompt.trim();
      const errors: FieldErrors = {};
      if (!text) errors.prompt = 'Write the next instruction.';
      else if (text.length > 32_000) errors.prompt = `The prompt is ${text.length} characters; at most 32000.`;
      return errors;
    }, async () => {
      const turn = await api<{ seq: number }>(`/v1/agent/jobs/${encodeURIComponent(props.jobId)}/turns`, { method: 'POST', body: { prompt: prompt.trim() } });
      setPrompt('');
      props.onSent();
      return `Turn ${turn.seq} queued.`;
    });
  };
  return (
    <form class="composer" onSubmit={onSubmit} noValidate>
      <Field label="Follow-up" name="prompt" error={form.errors.prompt}>
        <textarea {...fieldProps('prompt', form.errors)} rows={3} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      </Field>
      <SubmitRow label="Send" busy={form.busy} errors={form.errors} done={form.done} />
    </form>
  );
}

/** Forks the chat after a completed turn (docs/sandboxes.md "Forks") and opens the new chat. */
function ForkButton(props: { jobId: string; seq: number }): JSX.Element {
  return (
    <ActionButton label="Fork from here" done="Forked; opening the new chat…"
      run={async () => {
        const fork = await api<{ job_id: string }>(`/v1/agent/jobs/${encodeURIComponent(props.jobId)}/fork`, { method: 'POST', body: { anchor_seq: props.seq } });
        navigate(`/chats/${encodeURIComponent(fork.job_id)}`);
      }} />
  );
}

function Turns(props: { jobId: string; turns: TurnView[] }): JSX.Element {
  return (
    <Table<TurnView>
      caption="Turns"
      rows={props.turns}
      rowKey={(t) => t.seq}
      columns={[
        { label: 'Turn', cell: (t) => t.seq },
        { label: 'State', cell: (t) => <TurnBadge state={t.state} /> },
        { label: 'Outcome', cell: (t) => (t.error ? <span class="error">{t.error}</span> : t.result ? <span class="clip">{t.result}</span> : <span class="muted">–</span>) },
        { label: 'Started', cell: (t) => <When at={t.started_at} /> },
        { label: 'Finished', cell: (t) => <When at={t.finished_at} /> },
        { label: 'Fork', cell: (t) => (t.state === 'completed' ? <ForkButton jobId={props.jobId} seq={t.seq} /> : <span class="muted">–</span>) },
      ]}
    />
  );
}

/** The chat page (`/chats/:jobId`). */
export function ChatPage(props: PageProps): JSX.Element {
  const jobId = props.params.jobId ?? '';
  const job = useResource<JobView>(`/v1/agent/jobs/${encodeURIComponent(jobId)}`, { refreshMs: 10_000 });
  const questions = useResource<{ questions: QuestionRecord[] }>(`/v1/agent/jobs/${encodeURIComponent(jobId)}/questions`);
  const stream = useChatEvents(jobId);
  const items = useMemo(() => foldEvents(stream.events), [stream.events]);
  const records = useMemo(() => new Map((questions.data?.questions ?? []).map((q) => [`${q.attempt_id}/${q.request_id}`, q])), [questions.data]);
  const [overrides, setOverrides] = useState<Record<string, QuestionRecord>>({});

  const last = stream.events[stream.events.length - 1];
  useEffect(() => {
    if (!last) return;
    if (last.event_type.startsWith('turn_') || last.event_type === 'title_changed' || last.event_type === 'pull_request') void job.reload();
    if (last.event_type === 'question' || (last.event_type === 'notice' && textOf(last.payload.kind).startsWith('question_')) || last.event_type.startsWith('turn_')) void questions.reload();
  }, [last?.event_id]);

  const state = job.data?.conversation_state;
  useEffect(() => {
    if (isActive(state) && stream.state === 'ended') stream.resume();
  }, [state, stream.state]);

  const current = job.data?.turns.filter((t) => t.state === 'running' || t.state === 'queued') ?? [];
  const data = job.data;
  return (
    <Page title={data?.title || 'Chat'} actions={<><Link to="/chats">All chats</Link>{data ? <WorkspaceDownload jobId={jobId} /> : null}</>}>
      <Freshness loading={job.loading} loadedAt={job.loadedAt} error={job.error} />
      {data ? null : <ErrorNote error={job.error} what="The chat could not be read" />}
      {data ? (
        <div class="row chat-meta">
          <span role="status">State: <ChatState state={data.conversation_state} /></span>
          <span>Model <code>{data.model}</code></span>
          <span>{data.repo ? <>Repository <code>{data.repo}</code></> : 'Temporary workspace'}</span>
          {data.pull_request ? <a href={data.pull_request.url} rel="noopener noreferrer">Pull request #{data.pull_request.number}</a> : null}
          <span class="muted" role="status">{STREAM_LABEL[stream.state]}{stream.detail && stream.state !== 'live' ? ` (${stream.detail})` : ''}</span>
          {current.map((t) => (
            <ActionButton key={t.seq} label={`Cancel turn ${t.seq}`} danger run={() => api(`/v1/agent/jobs/${encodeURIComponent(jobId)}/turns/${t.seq}/cancel`, { method: 'POST', body: {} })}
              done={`Cancel requested for turn ${t.seq}.`} onDone={() => void job.reload()} />
          ))}
        </div>
      ) : null}
      {data ? <SshLine jobId={jobId} state={data.conversation_state} /> : null}
      <ol class="events" aria-label="Chat events" aria-live="polite">
        {items.map((item) => (
          <li key={item.key} class={`item-${item.kind}`}>
            {item.kind === 'turn' ? <div class="msg owner"><h2>Turn {item.seq}</h2><p>{item.prompt}</p></div> : null}
            {item.kind === 'tool' ? <ToolItem item={item} /> : null}
            {item.kind === 'event' && item.event.event_type === 'question' ? (
              <QuestionCard jobId={jobId} event={item.event}
                record={overrides[item.key] ?? records.get(`${item.event.attempt_id ?? ''}/${textOf(item.event.payload.request_id)}`)}
                onChanged={(record) => {
                  if (record) setOverrides((o) => ({ ...o, [item.key]: record }));
                  else void questions.reload();
                }} />
            ) : null}
            {item.kind === 'event' && item.event.event_type !== 'question' ? <EventItem event={item.event} /> : null}
          </li>
        ))}
      </ol>
      {data ? <Composer jobId={jobId} onSent={() => { void job.reload(); stream.resume(); }} /> : null}
      {data ? <details class="turns"><summary>All turns ({data.turns.length})</summary><Turns jobId={jobId} turns={data.turns} /></details> : null}
    </Page>
  );
}
