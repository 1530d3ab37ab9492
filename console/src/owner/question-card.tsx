/**
 * A native CLI's question, answered in place (docs/agent-drivers.md "Native questions"): each
 * question's options as radio buttons (checkboxes when it allows several) plus a free-text answer,
 * or a decline with an optional message. The answer goes to
 * `POST …/attempts/{attempt_id}/questions/{request_id}/answer`; the question's state is the API's
 * (`pending`, `answered`, `declined`, `expired`), and a refusal (409 for a stale or already
 * answered question, 400 for a bad answer) is shown as the API words it.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, useSession } from '../client';
import { Badge } from '../ui/parts';
import { textOf } from './fold-events';
import type { AgentEvent, NativeQuestion, QuestionRecord } from './types';

function questionsOf(event: AgentEvent): NativeQuestion[] {
  const list = event.payload.questions;
  return Array.isArray(list) ? (list as NativeQuestion[]) : [];
}

const STATE_TONE = { pending: 'info', answered: 'ok', declined: 'warn', expired: 'muted' } as const;

/** One question event with its answer form while it is pending. */
export function QuestionCard(props: { jobId: string; event: AgentEvent; record: QuestionRecord | undefined; onChanged: (record: QuestionRecord | undefined) => void }): JSX.Element {
  const { unreachableSince } = useSession();
  const questions = questionsOf(props.event);
  const requestId = textOf(props.event.payload.request_id);
  const [chosen, setChosen] = useState<Record<string, string[]>>({});
  const [other, setOther] = useState<Record<string, string>>({});
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  // A 409 means the API takes no answer to this question any more (answered elsewhere, or its attempt ended).
  const [closed, setClosed] = useState(false);
  const state = props.record?.state ?? 'pending';
  const open = state === 'pending' && !closed;
  const id = `q-${props.event.event_id}`;

  const send = async (body: Record<string, unknown>): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      const path = `/v1/agent/jobs/${encodeURIComponent(props.jobId)}/attempts/${encodeURIComponent(props.event.attempt_id ?? '')}/questions/${encodeURIComponent(requestId)}/answer`;
      props.onChanged(await api<QuestionRecord>(path, { method: 'POST', body }));
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, (err as Error).message);
      setError(`${e.message}${e.status ? ` (${e.status})` : ''}`);
      if (e.status === 409) {
        setClosed(true);
        props.onChanged(undefined);
      }
    } finally {
      setBusy(false);
    }
  };

  const answer = (event: Event): void => {
    event.preventDefault();
    const answers: Record<string, string[]> = {};
    for (const q of questions) {
      const picked = [...(chosen[q.id] ?? []), ...((other[q.id] ?? '').trim() ? [(other[q.id] ?? '').trim()] : [])];
      if (picked.length) answers[q.id] = picked;
    }
    if (!Object.keys(answers).length) {
      setError('Choose an option or write an answer (or decline).');
      return;
    }
    void send({ answers });
  };

  const toggle = (q: NativeQuestion, label: string, on: boolean): void => {
    const current = chosen[q.id] ?? [];
    setChosen({ ...chosen, [q.id]: q.multi_select ? (on ? [...current, label] : current.filter((l) => l !== label)) : [label] });
  };

  return (
    <form class="question card" aria-labelledby={`${id}-title`} onSubmit={answer}>
      <h3 id={`${id}-title`}>The agent asks <Badge tone={STATE_TONE[state]}>{state}</Badge></h3>
      {questions.map((q, qi) => (
        <fieldset key={q.id} disabled={!open || busy}>
          <legend>{q.header ? <strong>{q.header}: </strong> : null}{q.question}</legend>
          {q.options.map((o, oi) => (
            <label key={o.label} class="option">
              <input type={q.multi_select ? 'checkbox' : 'radio'} name={`${id}-${qi}`} id={`${id}-${qi}-${oi}`}
                checked={(chosen[q.id] ?? []).includes(o.label)} onChange={(e) => toggle(q, o.label, e.currentTarget.checked)} />
              {' '}{o.label}{o.description ? <span class="muted"> — {o.description}</span> : null}
            </label>
          ))}
          {open ? (
            <>
              <label for={`${id}-${qi}-other`}>{q.options.length ? 'Or your own answer' : 'Your answer'}</label>
              <input id={`${id}-${qi}-other`} value={other[q.id] ?? ''} maxLength={4000} onInput={(e) => setOther({ ...other, [q.id]: e.currentTarget.value })} />
            </>
          ) : null}
        </fieldset>
      ))}
      {open ? (
        <>
          <div class="row">
            <button type="submit" disabled={busy || unreachableSince !== undefined}>{busy ? 'Sending…' : 'Send answer'}</button>
            <label for={`${id}-decline`} class="muted">Decline message</label>
            <input id={`${id}-decline`} value={message} maxLength={4000} onInput={(e) => setMessage(e.currentTarget.value)} />
            <button type="button" disabled={busy || unreachableSince !== undefined} onClick={() => void send({ decline: true, ...(message.trim() ? { message: message.trim() } : {}) })}>Decline</button>
          </div>
        </>
      ) : null}
      {props.record?.answers ? <p class="muted">Answered: {Object.values(props.record.answers).flat().join(', ')}</p> : null}
      {props.record?.state === 'declined' && props.record.message ? <p class="muted">Declined: {props.record.message}</p> : null}
      {error ? <p class="error" role="alert">{error}</p> : null}
    </form>
  );
}
