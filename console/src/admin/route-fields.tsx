/**
 * The fields of one upstream route (provider, kind, base URL, key, upstream model, weight), shared
 * by the runtime-model, runtime-route and retarget forms. The key is write-only: the input starts
 * empty and is cleared after saving; an empty key keeps the saved one where the server allows it.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Field, type FieldErrors } from '../ui/form';
import { inputProps, numberOf } from './common';

/** The values of the route fields as typed. */
export interface RouteInput {
  provider: string;
  kind: string;
  base_url: string;
  api_key: string;
  provider_model_id: string;
  weight: string;
}

const EMPTY: RouteInput = { provider: '', kind: '', base_url: '', api_key: '', provider_model_id: '', weight: '' };

/** Route-field state; `scope` keeps ids unique and `param` prefixes the server's field names (`route.` for a model). */
export function useRouteInput(initial: Partial<RouteInput> = {}): { value: RouteInput; set: (patch: Partial<RouteInput>) => void; reset: () => void } {
  const [value, setValue] = useState<RouteInput>({ ...EMPTY, ...initial });
  return { value, set: (patch) => setValue((v) => ({ ...v, ...patch })), reset: () => setValue({ ...EMPTY, ...initial }) };
}

/** Checks before sending: a URL must be http(s), a weight a number ≥ 0; `needTarget` asks for a base URL or a provider. */
export function validateRoute(v: RouteInput, prefix: string, options: { needTarget: boolean; weight: boolean }): FieldErrors {
  const errors: FieldErrors = {};
  if (v.base_url.trim() && !/^https?:\/\/[^\s/]+/.test(v.base_url.trim())) errors[`${prefix}base_url`] = 'Enter an http(s) URL.';
  if (options.needTarget && !v.base_url.trim() && !v.provider.trim()) errors[`${prefix}base_url`] = 'Enter a base URL, or name a custom provider that has one.';
  if (options.weight && v.weight.trim() !== '' && (numberOf(v.weight) === undefined || numberOf(v.weight)! < 0)) errors[`${prefix}weight`] = 'A weight is a number of 0 or more.';
  if (v.provider.trim() && !/^[a-z0-9_-]{1,64}$/.test(v.provider.trim())) errors[`${prefix}provider`] = 'Lowercase letters, digits, - and _ (at most 64).';
  return errors;
}

/** The JSON body of the typed fields (empty ones left out). */
export function routeBody(v: RouteInput, options: { weight: boolean }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of ['provider', 'kind', 'base_url', 'api_key', 'provider_model_id'] as const) if (v[key].trim()) body[key] = key === 'api_key' ? v[key] : v[key].trim();
  if (options.weight && numberOf(v.weight) !== undefined) body.weight = numberOf(v.weight);
  return body;
}

/** The inputs; errors are looked up as `<prefix><field>` (the server's `param`). */
export function RouteInputs(props: { scope: string; prefix: string; input: ReturnType<typeof useRouteInput>; errors: FieldErrors; weight: boolean; keyHint?: string }): JSX.Element {
  const { value, set } = props.input;
  const field = (name: keyof RouteInput, label: string, control: (p: ReturnType<typeof inputProps>) => JSX.Element, hint?: string): JSX.Element => {
    // Zod names nested fields (`route.base_url`); the route builder names them bare (`kind`).
    const error = props.errors[`${props.prefix}${name}`] ?? props.errors[name];
    const p = inputProps(`${props.scope}-${name}`, error);
    return <Field label={label} name={`${props.scope}-${name}`} error={error} hint={hint}>{control(p)}</Field>;
  };
  return (
    <>
      {field('base_url', 'Base URL', (p) => <input {...p} type="url" value={value.base_url} onInput={(e) => set({ base_url: e.currentTarget.value })} placeholder="https://upstream.example/v1" />)}
      {field('provider', 'Provider label', (p) => <input {...p} value={value.provider} onInput={(e) => set({ provider: e.currentTarget.value })} />, 'A custom provider slug, a built-in kind, or a new label.')}
      {field('kind', 'Adapter kind', (p) => <input {...p} value={value.kind} onInput={(e) => set({ kind: e.currentTarget.value })} placeholder="generic_compat" />)}
      {field('provider_model_id', 'Upstream model name', (p) => <input {...p} value={value.provider_model_id} onInput={(e) => set({ provider_model_id: e.currentTarget.value })} />)}
      {field('api_key', 'API key', (p) => <input {...p} type="password" autocomplete="off" value={value.api_key} onInput={(e) => set({ api_key: e.currentTarget.value })} />, props.keyHint ?? 'Write-only: it is never shown again.')}
      {props.weight ? field('weight', 'Weight', (p) => <input {...p} inputMode="decimal" value={value.weight} onInput={(e) => set({ weight: e.currentTarget.value })} placeholder="1" />) : null}
    </>
  );
}
