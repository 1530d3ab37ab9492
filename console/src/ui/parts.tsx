/** Small shared pieces of every page: title, notices, badges, tables, times, action buttons. */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, useSession } from '../client';
import { href, onLinkClick } from '../router';

/** A page with its heading (the document title follows it). */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }): JSX.Element {
  document.title = props.title;
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title">{props.title}</h1>
        {props.actions ? <div class="page-actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

/** A link inside the console (no reload). */
export function Link(props: { to: string; children: ComponentChildren; class?: string }): JSX.Element {
  return <a href={href(props.to)} onClick={onLinkClick} class={props.class}>{props.children}</a>;
}

/** A coloured state label; `tone` picks the colour. */
export function Badge(props: { tone?: 'ok' | 'warn' | 'bad' | 'muted' | 'info'; children: ComponentChildren; title?: string }): JSX.Element {
  return <span class={`badge ${props.tone ?? 'muted'}`} title={props.title}>{props.children}</span>;
}

/** An error box for a failed load, with its status. */
export function ErrorNote(props: { error: ApiError | undefined; what?: string }): JSX.Element | null {
  if (!props.error) return null;
  return <p class="error" role="alert">{props.what ? `${props.what}: ` : ''}{props.error.message}{props.error.status ? ` (${props.error.status})` : ''}</p>;
}

/** "Loading…" or the data's age when it is old (a refresh failed). */
export function Freshness(props: { loading: boolean; loadedAt: number | undefined; error: ApiError | undefined }): JSX.Element | null {
  if (props.loading && props.loadedAt === undefined) return <p class="muted" role="status">Loading…</p>;
  if (props.error && props.loadedAt !== undefined) return <p class="warn" role="status">Showing data from {time(props.loadedAt)}: {props.error.message}</p>;
  return null;
}

/** A date/time as the reader's local time, with the ISO value in the title. */
export function When(props: { at: string | number | null | undefined }): JSX.Element {
  if (props.at === null || props.at === undefined || props.at === '') return <span class="muted">–</span>;
  const date = new Date(props.at);
  return <time dateTime={date.toISOString()} title={date.toISOString()}>{date.toLocaleString()}</time>;
}

/** HH:MM:SS of a timestamp. */
export function time(at: number): string {
  return new Date(at).toLocaleTimeString();
}

/** A data table with a caption (for screen readers) and a row per item. */
export function Table<T>(props: { caption: string; columns: Array<{ label: string; cell: (row: T) => ComponentChildren }>; rows: readonly T[] | undefined; empty?: string; rowKey: (row: T) => string | number }): JSX.Element {
  return (
    <table>
      <caption>{props.caption}</caption>
      <thead><tr>{props.columns.map((c) => <th scope="col" key={c.label}>{c.label}</th>)}</tr></thead>
      <tbody>
        {props.rows && props.rows.length === 0 ? <tr><td colSpan={props.columns.length} class="muted">{props.empty ?? 'Nothing here.'}</td></tr> : null}
        {(props.rows ?? []).map((row) => <tr key={props.rowKey(row)}>{props.columns.map((c) => <td key={c.label}>{c.cell(row)}</td>)}</tr>)}
      </tbody>
    </table>
  );
}

/**
 * A button that runs a server action and shows its outcome beside it: the server's refusal
 * (409, 400…) as the reason, or `done`. Disabled while running or while the server is unreachable.
 * `confirm` asks first.
 */
export function ActionButton(props: { label: string; run: () => Promise<unknown>; confirm?: string; done?: string; onDone?: () => void; danger?: boolean }): JSX.Element {
  const { unreachableSince } = useSession();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const click = async (): Promise<void> => {
    if (props.confirm && !window.confirm(props.confirm)) return;
    setBusy(true);
    setOutcome(undefined);
    try {
      await props.run();
      setOutcome({ ok: true, text: props.done ?? 'Done.' });
      props.onDone?.();
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, (err as Error).message);
      setOutcome({ ok: false, text: `${e.message}${e.status ? ` (${e.status})` : ''}` });
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={props.danger ? 'danger' : undefined} disabled={busy || unreachableSince !== undefined} onClick={() => void click()}>{busy ? 'Working…' : props.label}</button>
      {outcome ? <span class={outcome.ok ? 'ok' : 'error'} role={outcome.ok ? 'status' : 'alert'}>{outcome.text}</span> : null}
    </span>
  );
}
