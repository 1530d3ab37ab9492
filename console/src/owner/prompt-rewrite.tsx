/**
 * "Improve prompt" in the start-chat form (`POST /v1/agent/prompts/rewrite`,
 * docs/agent-grants.md "Prompt rewrite"): first asks the model for 2–4 clarification questions
 * (`clarify: true`), lets the owner answer them (blank answers are left out; the API takes at
 * most four), then asks for the rewritten prompt with those answers. The proposal replaces the
 * form's prompt only when the owner accepts it: a rewrite never silently changes what is sent.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, useSession } from '../client';

type Step =
  | { kind: 'idle' }
  | { kind: 'questions'; questions: string[]; answers: string[] }
  | { kind: 'proposal'; prompt: string };

/** The improve-prompt panel; `onAccept` receives the rewritten prompt. */
export function PromptRewrite(props: { prompt: string; model: string; onAccept: (prompt: string) => void }): JSX.Element {
  const { unreachableSince } = useSession();
  const [step, setStep] = useState<Step>({ kind: 'idle' });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const offline = unreachableSince !== undefined;

  const call = async (body: Record<string, unknown>): Promise<{ questions?: string[]; prompt?: string } | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await api<{ questions?: string[]; prompt?: string }>('/v1/agent/prompts/rewrite', { method: 'POST', body });
    } catch (err) {
      setError(err instanceof ApiError ? `${err.message}${err.status ? ` (${err.status})` : ''}` : (err as Error).message);
      return undefined;
    } finally {
      setBusy(false);
    }
  };

  const start = async (): Promise<void> => {
    if (!props.prompt.trim() || !props.model) {
      setError('Write a prompt and choose a model first.');
      return;
    }
    const answer = await call({ prompt: props.prompt, model: props.model, clarify: true });
    if (answer?.questions) setStep({ kind: 'questions', questions: answer.questions, answers: answer.questions.map(() => '') });
  };

  const rewrite = async (questions: string[], answers: string[]): Promise<void> => {
    const given = questions.map((question, i) => ({ question, answer: (answers[i] ?? '').trim() })).filter((a) => a.answer !== '').slice(0, 4);
    const answer = await call({ prompt: props.prompt, model: props.model, ...(given.length ? { answers: given } : {}) });
    if (answer?.prompt !== undefined) setStep({ kind: 'proposal', prompt: answer.prompt });
  };

  return (
    <div class="rewrite">
      {step.kind === 'idle' ? (
        <button type="button" disabled={busy || offline} onClick={() => void start()}>{busy ? 'Asking the model…' : 'Improve prompt'}</button>
      ) : null}
      {step.kind === 'questions' ? (
        <fieldset class="card">
          <legend>Clarify the task</legend>
          {step.questions.map((question, i) => (
            <div class="field" key={question}>
              <label for={`rewrite-q${i}`}>{question}</label>
              <input id={`rewrite-q${i}`} value={step.answers[i]} maxLength={2000}
                onInput={(e) => setStep({ ...step, answers: step.answers.map((a, j) => (j === i ? e.currentTarget.value : a)) })} />
            </div>
          ))}
          <div class="row">
            <button type="button" disabled={busy || offline} onClick={() => void rewrite(step.questions, step.answers)}>{busy ? 'Rewriting…' : 'Rewrite prompt'}</button>
            <button type="button" class="link" onClick={() => setStep({ kind: 'idle' })}>Cancel</button>
          </div>
        </fieldset>
      ) : null}
      {step.kind === 'proposal' ? (
        <fieldset class="card">
          <legend>Rewritten prompt</legend>
          <pre aria-label="Rewritten prompt">{step.prompt}</pre>
          <div class="row">
            <button type="button" onClick={() => { props.onAccept(step.prompt); setStep({ kind: 'idle' }); }}>Use this prompt</button>
            <button type="button" class="link" onClick={() => setStep({ kind: 'idle' })}>Keep mine</button>
          </div>
        </fieldset>
      ) : null}
      {error ? <p class="error" role="alert">{error}</p> : null}
    </div>
  );
}
