/**
 * The model relay (issue 26; docs/agent-drivers.md "Model relay"): a native coding CLI in the
 * sandbox reaches the gateway only through it. The container keeps `NetworkMode: none`; the host
 * runner serves HTTP on a Unix socket in a directory bind-mounted read-only into the container
 * (`/run/agent-relay/<uid>.sock`, owned by the member's UID, mode 0600, present only while that
 * member's turn runs), and a forwarder inside the container (`agent-relay-run`, socat) gives the
 * CLI a loopback TCP address for it.
 *
 * What passes: `POST` to the inference paths (chat completions, responses, messages and its
 * count_tokens) and `GET /v1/models`, a body of at most `maxBodyBytes`, a few content headers.
 * With the tool relay given, the relay's MCP endpoint also passes, to the control-plane API with the
 * attempt's residency credential (docs/mcp.md "Drivers"). Everything else is answered here (403 for
 * another path or method, 413 for a larger body) and never reaches the gateway. The CLI holds a placeholder key: the relay replaces any credential
 * with the turn's grant, which so never enters the container. Responses stream back unbuffered.
 * A model call answered 429/408/5xx (or not at all) is retried here with the drivers' one policy
 * before anything of it reaches the CLI, whose own retries are off (relay-retry.ts;
 * docs/agent-drivers.md "Retries").
 */
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { RELAY_MOUNT } from '../../agent/sandboxes/names';
import { forward, readBody, refuse } from './relay-forward';
import type { RelayRetry, RelayRetryOptions } from './relay-retry';

export { RELAY_MOUNT, relayHostDir } from '../../agent/sandboxes/names';

/** Inference paths a CLI may call (POST), besides `GET /v1/models`. */
export const RELAY_POST_PATHS: ReadonlySet<string> = new Set(['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens']);
/** Request headers passed to the gateway (everything else, credentials included, is dropped). */
const FORWARDED_HEADERS = ['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'openai-beta', 'user-agent', 'x-request-id'];
/** The tool relay's MCP endpoint on the control-plane API (docs/mcp.md "Drivers"). */
export const TOOL_RELAY_MCP_PATH = '/v1/agent/mcp/relay/mcp';
/** Request headers passed to the tool relay's MCP endpoint. */
const MCP_FORWARDED_HEADERS = ['content-type', 'accept', 'user-agent', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
/** Retries kept in {@link ModelRelay.retries} (the oldest are dropped). */
const RECORDED_RETRIES = 100;
/** The longest Unix socket path Linux accepts (108 bytes with its NUL). */
const SOCKET_PATH_MAX = 107;

/** The member's socket inside the container. */
export function relayContainerSocket(uid: number): string {
  return `${RELAY_MOUNT}/${uid}.sock`;
}

/** The member's loopback port inside the container (members of a group have distinct UIDs from 1000). */
export function relayContainerPort(uid: number): number {
  return 20_000 + ((uid - 1000) % 40_000);
}

export interface ModelRelayOptions {
  /** The container's relay directory on the host ({@link relayHostDir}). */
  hostDir: string;
  uid: number;
  /** The gateway's base URL, e.g. `http://127.0.0.1:8080`. */
  gatewayUrl: string;
  /** The turn's inference grant (`agr_…`), sent as `Authorization: Bearer`. */
  grantToken: string;
  maxBodyBytes: number;
  /**
   * The tool relay (docs/mcp.md "Drivers"): `POST`/`GET`/`DELETE` of {@link TOOL_RELAY_MCP_PATH}
   * go to the control-plane API with the attempt's residency credential instead of the gateway.
   */
  toolRelay?: { apiUrl: string; credential: string };
  /**
   * The retry policy of model calls (relay-retry.ts; docs/agent-drivers.md "Retries"), bounded by
   * the turn's deadline. Absent: a gateway answer is passed on as it is, never retried.
   */
  retries?: RelayRetryOptions;
}

export interface ModelRelay {
  socketPath: string;
  /** Requests forwarded to the gateway, and refused here. */
  readonly counts: { forwarded: number; refused: number };
  /** The retries decided so far (the latest {@link RECORDED_RETRIES}), in order. */
  readonly retries: readonly RelayRetry[];
  /** Why the relay last gave up retrying a model call, if it did: the reason a failing turn gives. */
  gaveUp(): string | undefined;
  close(): Promise<void>;
}

interface Target {
  base: URL;
  token: string;
  headers: readonly string[];
  what: string;
}

/** Where a request goes (the gateway with the grant, or the tool relay with the residency credential), or undefined when it is refused. */
function targetOf(options: ModelRelayOptions, method: string, path: string): Target | undefined {
  if ((method === 'POST' && RELAY_POST_PATHS.has(path)) || (method === 'GET' && path === '/v1/models')) {
    return { base: new URL(options.gatewayUrl), token: options.grantToken, headers: FORWARDED_HEADERS, what: 'gateway' };
  }
  if (options.toolRelay && path === TOOL_RELAY_MCP_PATH && ['POST', 'GET', 'DELETE'].includes(method)) {
    return { base: new URL(options.toolRelay.apiUrl), token: options.toolRelay.credential, headers: MCP_FORWARDED_HEADERS, what: 'tool relay' };
  }
  return undefined;
}

/** The headers sent on: the target's credential and the few content headers it accepts. */
function forwardedHeaders(req: IncomingMessage, target: Target, bodyLength: number): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Bearer ${target.token}` };
  for (const name of target.headers) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  if (bodyLength > 0 || req.method === 'POST') headers['content-length'] = String(bodyLength);
  return headers;
}

/** Starts a member's relay for one turn; `close` removes the socket. */
export async function startModelRelay(options: ModelRelayOptions): Promise<ModelRelay> {
  const socketPath = join(options.hostDir, `${options.uid}.sock`);
  if (Buffer.byteLength(socketPath) > SOCKET_PATH_MAX) throw new Error(`The model relay's socket path is too long (${socketPath}): set AGENT_RELAY_DIR to a shorter directory`);
  mkdirSync(options.hostDir, { recursive: true, mode: 0o755 });
  rmSync(socketPath, { force: true });
  const counts = { forwarded: 0, refused: 0 };

  const retries: RelayRetry[] = [];
  const state: { gaveUp?: string } = {};
  const retryOptions = options.retries && {
    ...options.retries,
    onRetry: (retry: RelayRetry) => {
      retries.push(retry);
      if (retries.length > RECORDED_RETRIES) retries.shift();
      options.retries?.onRetry?.(retry);
    },
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const target = targetOf(options, req.method ?? '', path);
    if (!target) {
      counts.refused += 1;
      req.resume();
      refuse(res, 403, `The model relay forwards only inference requests (POST ${[...RELAY_POST_PATHS].join(', ')}; GET /v1/models)${options.toolRelay ? ` and the tool relay (${TOOL_RELAY_MCP_PATH})` : ''}`);
      return;
    }
    const tooLarge = () => {
      counts.refused += 1;
      refuse(res, 413, `The request body is larger than the model relay's limit (${options.maxBodyBytes} bytes)`);
    };
    if (Number(req.headers['content-length'] ?? 0) > options.maxBodyBytes) {
      req.resume();
      tooLarge();
      return;
    }
    void readBody(req, options.maxBodyBytes).then((body) => {
      if (body === undefined) {
        tooLarge();
        req.destroy();
        return;
      }
      counts.forwarded += 1;
      const headers = forwardedHeaders(req, target, body.length);
      // Only model calls are retried: a tool relay call may have had its effect already.
      const policy = target.what === 'gateway' ? retryOptions : undefined;
      return forward({ method: req.method ?? 'GET', url: new URL(url, target.base), headers, body, what: target.what, policy }, res).then((gaveUp) => {
        if (gaveUp) state.gaveUp = gaveUp;
      });
    }).catch(() => res.destroy());
  };

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  try {
    chownSync(socketPath, options.uid, options.uid);
    chmodSync(socketPath, 0o600);
  } catch (err) {
    server.close();
    rmSync(socketPath, { force: true });
    throw new Error(`The model relay's socket could not be given to member ${options.uid}: ${(err as Error).message}`, { cause: err });
  }
  return {
    socketPath,
    counts,
    retries,
    gaveUp: () => state.gaveUp,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      rmSync(socketPath, { force: true });
    }),
  };
}
