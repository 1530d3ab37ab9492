/**
 * One internal HTTP endpoint, defined once for both sides (docs/agent-control-plane.md "Internal
 * contracts"): its name (in errors and logs), method, route pattern, and the zod schemas of its
 * request and response body. The server registers `route` and validates bodies with `request`;
 * the client builds the path with {@link pathOf}, types its body with `z.input` of `request` and
 * parses the answer with `response` (lib/http/internal-client.ts). A contract module depends on
 * zod and lib only, so the gateway, the API, activities and workers may all import it.
 */
import type { z } from 'zod';

/** The path parameters of a route pattern: `'/a/:x/b/:y'` → `{ x: string; y: string }`. */
export type RouteParams<R extends string> =
  R extends `${string}:${infer Name}/${infer Rest}` ? { [K in Name]: string } & RouteParams<`/${Rest}`>
    : R extends `${string}:${infer Name}` ? { [K in Name]: string }
      : Record<never, never>;

export interface Endpoint<R extends string = string, Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  /** Names the call in errors and logs: `grant issue`, `host heartbeat`. */
  readonly name: string;
  readonly method: 'GET' | 'POST';
  /** The route pattern the server registers, e.g. `/v1/agent/hosts/:hostId/heartbeat`. */
  readonly route: R;
  /** The request body (`z.object({})` for a call without fields). */
  readonly request: Req;
  /** A successful answer's body; unknown fields are dropped, so servers may add fields first. */
  readonly response: Res;
}

/** Defines an endpoint, keeping the literal route so its parameters are typed. */
export function defineEndpoint<const R extends string, Req extends z.ZodType, Res extends z.ZodType>(endpoint: Endpoint<R, Req, Res>): Endpoint<R, Req, Res> {
  return Object.freeze(endpoint);
}

/** The concrete path of `endpoint` for `params`, each parameter URL-encoded as one segment. */
export function pathOf<R extends string>(endpoint: Pick<Endpoint<R>, 'route'>, params: RouteParams<R>): string {
  const values = params as Record<string, string>;
  return endpoint.route.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`Missing path parameter '${name}' for ${endpoint.route}`);
    return encodeURIComponent(value);
  });
}

/** The body type a client sends (before defaults apply). */
export type RequestOf<E extends Endpoint> = z.input<E['request']>;
/** The body type a server receives after validation. */
export type ValidRequestOf<E extends Endpoint> = z.output<E['request']>;
/** The body type of a successful answer. */
export type ResponseOf<E extends Endpoint> = z.output<E['response']>;
