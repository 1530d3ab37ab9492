/**
 * Pieces shared by the gateway admin pages: path-segment encoding, the role list, the shapes the
 * admin API answers, a field id scoped to one row (several forms on a page), the "demo" mark and
 * the key view (prefix and fingerprint only: a key value is never rendered back).
 */
import type { JSX } from 'preact';
import { Badge } from '../ui/parts';

/** A path segment (model ids may hold `/` and `:`). */
export const seg = (value: string): string => encodeURIComponent(value);

/** The account roles, lowest first (the gateway's `ROLES`). */
export const ROLES = ['free', 'pro', 'internal', 'admin'] as const;

/** One route as the admin routing listing shows it. */
export interface RouteView {
  model_id: string;
  route_id: string;
  endpoint_id: string;
  source: 'yaml' | 'override' | 'runtime';
  kind: string;
  provider: string;
  provider_display_name: string | null;
  base_url: string;
  upstream_api?: string;
  provider_model_id: string;
  weight: number;
  weight_override: number | null;
  effective_weight: number;
  published: boolean;
  exclusion_reasons: string[];
  keys: Array<{ prefix: string; fingerprint: string }>;
  candidate_id?: string;
}

/** One model of `GET /admin/routing` (`demo` is optional: only demo models carry it). */
export interface ModelView {
  id: string;
  name: string;
  aliases?: string[];
  model_type?: string;
  source: 'yaml' | 'runtime';
  router: string;
  required_role: string | null;
  concurrency_exempt?: boolean;
  context_length?: number;
  max_output_length?: number;
  demo?: boolean;
  routes: RouteView[];
}

/** `GET /admin/routing`. */
export interface RoutingListing {
  revision?: number | string;
  models: ModelView[];
  disabled_providers: Array<{ provider: string; reason: string | null }>;
  unapplied_runtime_routes: Array<{ candidate_id: string; model_id: string; route_id: string; kind: string; provider: string | null; base_url: string | null }>;
  custom_providers: string[];
}

/** A probe answer of the verification endpoints (never saved). */
export interface ProbeResult {
  saved: false;
  ok?: boolean;
  status?: number;
  message?: string;
  latency_ms?: number;
  [key: string]: unknown;
}

/** Props of an input whose field id is scoped (`f-<id>`), described by its error when it has one. */
export function inputProps(id: string, error: string | undefined): { id: string; name: string; 'aria-invalid': boolean; 'aria-describedby'?: string } {
  const full = `f-${id}`;
  return error ? { id: full, name: id, 'aria-invalid': true, 'aria-describedby': `${full}-error` } : { id: full, name: id, 'aria-invalid': false };
}

/** The "demo" mark of a model (items of `/v1/models` with `"demo": true`). */
export function DemoMark(props: { model: { demo?: boolean } }): JSX.Element | null {
  return props.model.demo === true ? <Badge tone="info" title="A demo model">demo</Badge> : null;
}

/** The source tag of a route: file, file route retargeted at runtime, or runtime route. */
export function SourceTag(props: { source: string }): JSX.Element {
  const tone = props.source === 'yaml' ? 'muted' : props.source === 'override' ? 'warn' : 'info';
  return <Badge tone={tone}>{props.source}</Badge>;
}

/** A key shown as prefix and fingerprint (the only forms the server ever returns). */
export function KeyView(props: { prefix: string; fingerprint: string }): JSX.Element {
  return <code title={`fingerprint ${props.fingerprint}`}>{props.prefix}… ({props.fingerprint})</code>;
}

/** The outcome of a verification: reachable or not, with the server's words. */
export function ProbeNote(props: { result: ProbeResult | undefined }): JSX.Element | null {
  if (!props.result) return null;
  const ok = props.result.ok !== false;
  const detail = Object.entries(props.result).filter(([k]) => k !== 'saved' && k !== 'ok').map(([k, v]) => `${k}: ${show(v)}`).join(', ');
  return <p class={ok ? 'ok' : 'error'} role="status">Verification {ok ? 'succeeded' : 'failed'} (not saved){detail ? `: ${detail}` : ''}</p>;
}

/** A value as short text (objects as JSON). */
export function show(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

/** A number read from a text input, or undefined when empty / not a number. */
export function numberOf(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}
