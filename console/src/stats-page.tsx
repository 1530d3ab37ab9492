/**
 * `/console/stats` (the gateway redirects `/stats` here): the deployment's public stats for anyone,
 * signed in or not (docs/public-stats.md). Figures about fewer than three accounts are withheld by
 * the server; the page says how many items were left out.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { figure, loadPublicStats, type StatsItem, type StatsState } from './public-stats';
import { Page, Table } from './ui/parts';

function Section<T extends StatsItem>(props: { caption: string; label: string; name: (row: T) => string; section: { items: T[]; withheld: number } }): JSX.Element {
  return (
    <>
      <Table<T>
        caption={props.caption}
        rowKey={props.name}
        rows={props.section.items}
        empty="Nothing to show."
        columns={[
          { label: props.label, cell: props.name },
          { label: 'Requests', cell: (r) => figure(r.requests) },
          { label: 'Accounts', cell: (r) => figure(r.accounts) },
          { label: 'Prompt tokens', cell: (r) => figure(r.prompt_tokens) },
          { label: 'Completion tokens', cell: (r) => figure(r.completion_tokens) },
        ]}
      />
      {props.section.withheld > 0 ? <p class="muted">{props.section.withheld} more withheld (fewer than three accounts each).</p> : null}
    </>
  );
}

/** The public stats page. */
export function StatsPage(): JSX.Element {
  const [state, setState] = useState<StatsState | undefined>(undefined);
  useEffect(() => {
    void loadPublicStats().then(setState);
  }, []);
  if (!state) return <Page title="Usage statistics"><p class="muted" role="status">Loading…</p></Page>;
  if (state.kind !== 'published') return <Page title="Usage statistics"><p role={state.kind === 'error' ? 'alert' : 'status'}>{state.message}</p></Page>;
  const s = state.stats;
  return (
    <Page title="Usage statistics">
      <p>
        The {s.window.weeks} weeks from {s.window.start.slice(0, 10)} to {s.window.end.slice(0, 10)} (UTC), as of {s.generated_at.slice(0, 16).replace('T', ' ')} UTC.
        Figures about fewer than {s.min_accounts} accounts are withheld.
      </p>
      <dl class="stats-totals">
        <dt>Requests</dt><dd>{figure(s.totals?.requests ?? null)}</dd>
        <dt>Active accounts</dt><dd>{figure(s.totals?.accounts ?? null)}</dd>
        <dt>Tokens (prompt / completion)</dt><dd>{figure(s.totals?.prompt_tokens ?? null)} / {figure(s.totals?.completion_tokens ?? null)}</dd>
        <dt>Accounts registered</dt><dd>{figure(s.accounts.registered)}</dd>
        <dt>New accounts in the window</dt><dd>{figure(s.accounts.new_in_window)}</dd>
      </dl>
      <Table
        caption="Weekly"
        rowKey={(w) => w.week_start}
        rows={s.weeks}
        columns={[
          { label: 'Week of', cell: (w) => w.week_start },
          { label: 'Requests', cell: (w) => (w.withheld ? 'withheld' : figure(w.requests)) },
          { label: 'Active accounts', cell: (w) => (w.withheld ? 'withheld' : figure(w.accounts)) },
        ]}
      />
      <Section caption="Models" label="Model" name={(r: StatsItem & { model: string }) => r.model} section={s.models} />
      <Section caption="Surfaces" label="Surface" name={(r: StatsItem & { surface: string }) => r.surface} section={s.surfaces} />
      {s.languages ? <Section caption="Writing systems of prompts" label="Script" name={(r: StatsItem & { script: string }) => r.script} section={s.languages} /> : null}
    </Page>
  );
}
