/**
 * One model's page (`/admin/routing/{model}`): its routes with source tags, keys (prefix and
 * fingerprint only) and exclusion reasons; each route's weight panel; route changes; the strategy
 * switch and the offload policy. Reads `GET /admin/routing` (refreshed every 10 s).
 */
import type { JSX } from 'preact';
import type { PageProps } from '../pages';
import { Badge, ErrorNote, Freshness, Link, Page } from '../ui/parts';
import { useResource } from '../ui/resource';
import { DemoMark, KeyView, SourceTag, type RoutingListing } from './common';
import { RouteActions, RouteForm } from './model-routes';
import { OffloadPanel, StrategyForm } from './model-policy';
import { WeightEditor } from './weights';

/** `/admin/routing/:model`. */
export function ModelPage(props: PageProps): JSX.Element {
  const modelId = props.params.model ?? '';
  const listing = useResource<RoutingListing>('/admin/routing', { refreshMs: 10_000 });
  const model = listing.data?.models.find((m) => m.id === modelId);
  const reload = (): void => void listing.reload();
  return (
    <Page title={`Model ${modelId}`} actions={<Link to="/admin/routing">All models</Link>}>
      <Freshness loading={listing.loading} loadedAt={listing.loadedAt} error={listing.error} />
      <ErrorNote error={listing.data ? undefined : listing.error} what="The routing table could not be read" />
      {listing.data && !model ? <p role="alert">No model <code>{modelId}</code> in the routing table.</p> : null}
      {model ? (
        <>
          <p>
            <SourceTag source={model.source} /> <DemoMark model={model} /> {model.name !== model.id ? model.name : null}
            {' · '}strategy {model.router} · required role {model.required_role ?? 'none'}
            {model.context_length ? ` · context ${model.context_length}` : ''}
          </p>
          <h2>Routes and weights</h2>
          {model.routes.map((r) => (
            <section key={r.route_id} class="route" aria-label={`Route ${r.route_id}`}>
              <h3>
                <code>{r.route_id}</code> <SourceTag source={r.source} /> {r.provider_display_name ?? r.provider}
                {!r.published ? <> <Badge tone="warn">no traffic</Badge></> : null}
              </h3>
              <p class="muted">
                endpoint <code>{r.endpoint_id}</code> · {r.kind} · {r.base_url} · upstream model {r.provider_model_id}
                {r.upstream_api === 'responses' ? ' · Responses API' : ''}
              </p>
              {r.keys.length ? <p>Keys: {r.keys.map((k) => <KeyView key={k.fingerprint} {...k} />)}</p> : <p class="muted">No key.</p>}
              {r.exclusion_reasons.length ? <p class="warn">Excluded: {r.exclusion_reasons.join('; ')}</p> : null}
              <WeightEditor modelId={model.id} endpointId={r.endpoint_id} version={`${r.weight_override}/${r.effective_weight}/${r.exclusion_reasons.join(';')}`} onChanged={reload} />
              <RouteActions modelId={model.id} route={r} onChanged={reload} />
            </section>
          ))}
          <h2>Add a runtime route</h2>
          <RouteForm modelId={model.id} mode={{ kind: 'add' }} onSaved={reload} />
          <h2>Strategy</h2>
          <StrategyForm model={model} onChanged={reload} />
          <h2>Offload policy</h2>
          <OffloadPanel model={model} />
        </>
      ) : null}
    </Page>
  );
}
