/**
 * The routing table (`GET /admin/routing`): every model with its routes tagged by source
 * (yaml / override / runtime), effective weights and exclusion reasons, the disabled providers
 * and the runtime routes not applied. Each model links to its page (weights, strategy, offload,
 * routes). Refreshed every 10 s.
 */
import type { JSX } from 'preact';
import { Badge, ErrorNote, Freshness, Link, Page, Table } from '../ui/parts';
import { useResource } from '../ui/resource';
import { DemoMark, seg, SourceTag, type ModelView, type RoutingListing } from './common';
import { RuntimeModelForm } from './runtime-model';

function RouteSummary(props: { model: ModelView }): JSX.Element {
  return (
    <ul class="plain">
      {props.model.routes.map((r) => (
        <li key={r.route_id}>
          <code>{r.route_id}</code> <SourceTag source={r.source} /> {r.provider} · weight {r.effective_weight}
          {r.weight_override !== null ? <span class="muted"> (override {r.weight_override}, file {r.weight})</span> : null}
          {r.exclusion_reasons.length ? <Badge tone="warn" title={r.exclusion_reasons.join('; ')}>excluded: {r.exclusion_reasons.join('; ')}</Badge> : null}
        </li>
      ))}
    </ul>
  );
}

/** `/admin/routing`. */
export function RoutingPage(): JSX.Element {
  const listing = useResource<RoutingListing>('/admin/routing', { refreshMs: 10_000 });
  const data = listing.data;
  return (
    <Page title="Models and routes">
      <Freshness loading={listing.loading} loadedAt={listing.loadedAt} error={listing.error} />
      {!data ? <ErrorNote error={listing.error} what="The routing table could not be read" /> : null}
      <Table<ModelView>
        caption="Models and their routes"
        rows={data?.models}
        rowKey={(m) => m.id}
        empty="No models are configured."
        columns={[
          { label: 'Model', cell: (m) => <><Link to={`/admin/routing/${seg(m.id)}`}>{m.id}</Link> <DemoMark model={m} /></> },
          { label: 'Source', cell: (m) => <SourceTag source={m.source} /> },
          { label: 'Strategy', cell: (m) => m.router },
          { label: 'Required role', cell: (m) => m.required_role ?? <span class="muted">none</span> },
          { label: 'Routes', cell: (m) => <RouteSummary model={m} /> },
        ]}
      />
      {data && data.disabled_providers.length ? (
        <Table
          caption="Providers out of rotation"
          rows={data.disabled_providers}
          rowKey={(d) => d.provider}
          columns={[{ label: 'Provider', cell: (d) => d.provider }, { label: 'Reason', cell: (d) => d.reason ?? <span class="muted">none given</span> }]}
        />
      ) : null}
      {data && data.unapplied_runtime_routes.length ? (
        <Table
          caption="Runtime routes not applied (their model or provider is missing)"
          rows={data.unapplied_runtime_routes}
          rowKey={(r) => r.route_id}
          columns={[
            { label: 'Route', cell: (r) => <code>{r.route_id}</code> },
            { label: 'Kind', cell: (r) => r.kind },
            { label: 'Provider', cell: (r) => r.provider ?? '–' },
            { label: 'Base URL', cell: (r) => r.base_url ?? '–' },
          ]}
        />
      ) : null}
      <h2>Create a runtime model</h2>
      <RuntimeModelForm onCreated={() => void listing.reload()} />
    </Page>
  );
}
