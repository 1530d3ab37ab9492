/**
 * The owner's usage (`/settings/usage`) over the last 7 or 30 UTC days (the API's `days`; the
 * choice is kept in the URL): the sandboxes (containers) with their running time and latest
 * resources, the daily running time of all of them, and the runs' turns, requests, tokens and cost
 * by day and by model (docs/agent-api.md "Usage"). Read once per visit and on switching: these are
 * daily sums, not live data.
 */
import type { JSX } from 'preact';
import type { PageProps } from '../pages';
import { navigate } from '../router';
import { ErrorNote, Freshness, Link, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';

interface Container {
  job_id: string;
  title: string;
  job_ids: string[];
  state: string;
  last_activity_at: string | null;
  running_seconds: number;
  resources: { cpu_percent: number | null; memory_bytes: number | null; disk_bytes: number | null; stale: boolean };
}
interface DailyContainers { from: string; to: string; total_running_seconds: number; daily: Array<{ day: string; running_seconds: number; running_hours: number }> }
interface RunSums { turns: number; requests: number; input_tokens: number; output_tokens: number; cost_usd: number }
interface RunUsage { from: string; to: string; daily: Array<RunSums & { day: string; models: Array<RunSums & { model: string }> }>; models: Array<RunSums & { model: string }>; totals: RunSums }

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return h ? `${h} h ${m} min` : `${m} min`;
}

function bytes(value: number | null): string {
  if (value === null) return '–';
  return value >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(1)} MiB` : `${(value / 1024).toFixed(1)} KiB`;
}

function usd(value: number): string {
  return `$${value.toFixed(value < 0.01 && value > 0 ? 6 : 2)}`;
}

const sumColumns = [
  { label: 'Turns', cell: (r: RunSums) => r.turns },
  { label: 'Requests', cell: (r: RunSums) => r.requests },
  { label: 'Input tokens', cell: (r: RunSums) => r.input_tokens },
  { label: 'Output tokens', cell: (r: RunSums) => r.output_tokens },
  { label: 'Cost', cell: (r: RunSums) => usd(r.cost_usd) },
];

/** The usage page. */
export function UsagePage(props: PageProps): JSX.Element {
  const days = props.query.get('days') === '30' ? 30 : 7;
  const containers = useResource<{ containers: Container[] }>(`/v1/agent/usage/containers?days=${days}`);
  const daily = useResource<DailyContainers>(`/v1/agent/usage/containers/daily?days=${days}`);
  const runs = useResource<RunUsage>(`/v1/agent/usage/runs?days=${days}`);
  return (
    <Page title="Usage">
      <div class="row" role="group" aria-label="Window">
        {[7, 30].map((n) => (
          <button key={n} type="button" aria-pressed={days === n} class={days === n ? 'pressed' : undefined} onClick={() => navigate(`/settings/usage?days=${n}`, { replace: true })}>{n} days</button>
        ))}
        <span class="muted">{runs.data ? `UTC days ${runs.data.from} to ${runs.data.to}` : `The last ${days} UTC days`}</span>
      </div>

      <h2>Runs</h2>
      <Freshness loading={runs.loading} loadedAt={runs.loadedAt} error={runs.error} />
      <ErrorNote error={runs.data ? undefined : runs.error} what="Run usage could not be read" />
      {runs.data ? (
        <>
          <p>Total: {runs.data.totals.turns} turns, {runs.data.totals.requests} requests, {runs.data.totals.input_tokens + runs.data.totals.output_tokens} tokens, {usd(runs.data.totals.cost_usd)}.</p>
          <Table caption="Runs by model" rows={runs.data.models} rowKey={(r) => r.model} empty="No runs in this window."
            columns={[{ label: 'Model', cell: (r) => <code>{r.model}</code> }, ...sumColumns]} />
          <Table caption="Runs by day" rows={[...runs.data.daily].reverse()} rowKey={(r) => r.day}
            columns={[{ label: 'Day (UTC)', cell: (r) => r.day }, ...sumColumns, { label: 'Models', cell: (r) => r.models.map((m) => m.model).join(', ') }]} />
        </>
      ) : null}

      <h2>Containers</h2>
      <Freshness loading={containers.loading} loadedAt={containers.loadedAt} error={containers.error} />
      <ErrorNote error={containers.data ? undefined : containers.error} what="Container usage could not be read" />
      <Table<Container> caption="Your sandboxes" rows={containers.data?.containers} rowKey={(c) => c.job_id} empty="No sandboxes in this window."
        columns={[
          { label: 'First chat', cell: (c) => <Link to={`/chats/${encodeURIComponent(c.job_id)}`}>{c.title || c.job_id}</Link> },
          { label: 'Chats', cell: (c) => c.job_ids.length },
          { label: 'State', cell: (c) => c.state },
          { label: 'Running time', cell: (c) => duration(c.running_seconds) },
          { label: 'CPU', cell: (c) => (c.resources.cpu_percent === null ? '–' : `${c.resources.cpu_percent.toFixed(1)} %`) },
          { label: 'Memory', cell: (c) => bytes(c.resources.memory_bytes) },
          { label: 'Disk', cell: (c) => <>{bytes(c.resources.disk_bytes)}{c.resources.stale ? <span class="muted"> (stale)</span> : null}</> },
          { label: 'Last activity', cell: (c) => <When at={c.last_activity_at} /> },
        ]} />
      <ErrorNote error={daily.data ? undefined : daily.error} what="Daily container usage could not be read" />
      {daily.data ? (
        <Table caption={`Container running time by day (total ${duration(daily.data.total_running_seconds)})`} rows={[...daily.data.daily].reverse()} rowKey={(d) => d.day}
          columns={[{ label: 'Day (UTC)', cell: (d) => d.day }, { label: 'Running time', cell: (d) => duration(d.running_seconds) }, { label: 'Hours', cell: (d) => d.running_hours }]} />
      ) : null}
    </Page>
  );
}
