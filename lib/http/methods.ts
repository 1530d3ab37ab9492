/**
 * Request methods, for the routes that forward whatever method they are sent (the database tool's
 * proxy, docs/agent-admin.md "Database tool") and for the OpenAPI document, which can name only
 * some of them as operations (lib/http/openapi.ts).
 */
import { METHODS } from 'node:http';

/**
 * Every method Node's HTTP parser accepts, except CONNECT: Node never hands a CONNECT to a request
 * handler (it is a tunnel, the server's `connect` event), so no route could serve it.
 */
export const FORWARDABLE_METHODS: readonly string[] = Object.freeze(METHODS.filter((method) => method !== 'CONNECT'));

/** The methods an OpenAPI path item has a field for; any other is listed under `x-other-methods`. */
export const OPENAPI_METHODS: ReadonlySet<string> = new Set(['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE']);
