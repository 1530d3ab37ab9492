/**
 * Health and routing status as readable pages: `GET /health/deep` (verdict, per-endpoint circuit
 * state and availability, exclusions with reasons, providers, outbound concurrency lanes) and
 * `GET /routing` (every published route with its effective weight, the routing file's state and
 * the local endpoints' probe results). Both refreshed every 5 s.
 */
import type { JSX } from 'preact';
import { Badge, ErrorNote, Freshness, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { show } from './common';

interface Endpoint { endpoint_id: string; provider: string; models: string[]; circuit: string; availability: number; consecutive_failures: number; probe_in_flight: boolean; degraded: boolean; status: string }
interface Exclusion { model: string; endpoint_id: string; provider: string; configured_weight: number; effective_weight: number; reasons: string[] }
interface DeepHealth {
  status: string;
  endpoints: Endpoint[];
  route_exclusions: Exclusion[];
  providers: Record<string, { status: string; endpoints: string[]; excluded_from_models: string[]; exclusion_reasons: Record<string, string[]> }>;
  concurrency: Array<Record<string, unknown>>;
}

const tone = (status: string): 'ok' | 'bad' | 'warn' => (status === 'healthy' || status === 'closed' ? 'ok' : status === 'open' ? 'bad' : 'warn');

/** `/admin/health`. */
export function HealthPage(): JSX.Element {
  const health = useResource<DeepHealth>('/health/deep', { refreshMs: 5000 });
  const h = health.data;
  const lanes = h?.concurrency ?? [];
  const laneKeys = [...new Set(lanes.flatMap((l) => Object.keys(l)))];
  return (
    <Page title="Gateway health">
      <Freshness loading={health.loading} loadedAt={health.loadedAt} error={health.error} />
      <ErrorNote error={h ? undefined : health.error} what="/health/deep could not be read" />
      {h ? <p role="status">Verdict: <Badge tone={tone(h.status)}>{h.status}</Badge></p> : null}
      <Table<Endpoint>
        caption="Endpoints taking traffic"
        rows={h?.endpoints}
        rowKey={(e) => e.endpoint_id}
        empty="No endpoint takes traffic."
        columns={[
          { label: 'Endpoint', cell: (e) => <code>{e.endpoint_id}</code> },
          { label: 'Provider', cell: (e) => e.provider },
          { label: 'Models', cell: (e) => e.models.join(', ') },
          { label: 'Circuit', cell: (e) => <Badge tone={tone(e.circuit)}>{e.circuit}</Badge> },
          { label: 'Availability', cell: (e) => `${(e.availability * 100).toFixed(1)} %` },
          { label: 'Failures in a row', cell: (e) => e.consecutive_failures },
          { label: 'State', cell: (e) => <><Badge tone={tone(e.status)}>{e.status}</Badge>{e.degraded ? ' credential rejected' : ''}{e.probe_in_flight ? ' (probing)' : ''}</> },
        ]}
      />
      <Table<Exclusion>
        caption="Routes kept out of traffic"
        rows={h?.route_exclusions}
        rowKey={(x) => `${x.model}/${x.endpoint_id}`}
        empty="No exclusions."
        columns={[
          { label: 'Model', cell: (x) => x.model },
          { label: 'Endpoint', cell: (x) => <code>{x.endpoint_id}</code> },
          { label: 'Provider', cell: (x) => x.provider },
          { label: 'Weight (configured → effective)', cell: (x) => `${x.configured_weight} → ${x.effective_weight}` },
          { label: 'Reasons', cell: (x) => x.reasons.join('; ') },
        ]}
      />
      <Table
        caption="Providers"
        rows={h ? Object.entries(h.providers).map(([name, p]) => ({ name, ...p })) : undefined}
        rowKey={(p) => p.name}
        columns={[
          { label: 'Provider', cell: (p) => p.name },
          { label: 'State', cell: (p) => <Badge tone={tone(p.status)}>{p.status}</Badge> },
          { label: 'Endpoints', cell: (p) => p.endpoints.join(', ') || '–' },
          { label: 'Excluded from', cell: (p) => p.excluded_from_models.map((m) => `${m} (${(p.exclusion_reasons[m] ?? []).join('; ')})`).join(', ') || '–' },
        ]}
      />
      <Table
        caption="Outbound concurrency lanes"
        rows={lanes}
        rowKey={(l) => show(l.lane ?? l)}
        empty="No lanes yet."
        columns={laneKeys.map((k) => ({ label: k, cell: (l: Record<string, unknown>) => show(l[k]) }))}
      />
    </Page>
  );
}

interface RoutingStatus {
  routes: Array<{ model: string; route_id: string; endpoint_id: string; provider: string; base_url: string; weight: number; router: string }>;
  manager_status: { status: string; source_file: string; default_router: string; split_applied: boolean; local_fraction: number; health_check_seconds: number; endpoint_health: Record<string, Record<string, unknown>>; error?: string };
}

/** `/admin/routing-status`. */
export function RoutingStatusPage(): JSX.Element {
  const status = useResource<RoutingStatus>('/routing', { refreshMs: 5000 });
  const s = status.data;
  const m = s?.manager_status;
  return (
    <Page title="Routing status">
      <Freshness loading={status.loading} loadedAt={status.loadedAt} error={status.error} />
      <ErrorNote error={s ? undefined : status.error} what="/routing could not be read" />
      {m ? (
        <dl class="facts">
          <dt>Routing file</dt><dd><Badge tone={m.status === 'loaded' ? 'ok' : m.status === 'failed' ? 'bad' : 'muted'}>{m.status}</Badge> <code>{m.source_file}</code>{m.error ? <span class="error"> {m.error}</span> : null}</dd>
          <dt>Default strategy</dt><dd>{m.default_router}</dd>
          <dt>Local/remote split</dt><dd>{m.split_applied ? `applied (local fraction ${m.local_fraction})` : 'not applied'}</dd>
          <dt>Health checks</dt><dd>every {m.health_check_seconds} s (results never change routing)</dd>
        </dl>
      ) : null}
      <Table
        caption="Published routes and effective weights"
        rows={s?.routes}
        rowKey={(r) => r.route_id}
        columns={[
          { label: 'Model', cell: (r) => r.model },
          { label: 'Route', cell: (r) => <code>{r.route_id}</code> },
          { label: 'Endpoint', cell: (r) => <code>{r.endpoint_id}</code> },
          { label: 'Provider', cell: (r) => r.provider },
          { label: 'Base URL', cell: (r) => r.base_url },
          { label: 'Weight', cell: (r) => r.weight },
          { label: 'Strategy', cell: (r) => r.router },
        ]}
      />
      <Table
        caption="Endpoint health (local endpoints' probes)"
        rows={m ? Object.entries(m.endpoint_health).map(([endpoint, v]) => ({ endpoint, v })) : undefined}
        rowKey={(e) => e.endpoint}
        empty="Probing is off."
        columns={[
          { label: 'Endpoint', cell: (e) => <code>{e.endpoint}</code> },
          { label: 'Last probe', cell: (e) => Object.entries(e.v).map(([k, v]) => `${k}: ${show(v)}`).join(', ') },
        ]}
      />
    </Page>
  );
}
