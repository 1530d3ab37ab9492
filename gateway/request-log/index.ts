/**
 * The request log (`api_logs`, spec 2.8): one row per inference request, written off the request
 * path by the batching writer. {@link RequestLog.finish} is what the hot path calls when a
 * request's response has ended; it only decides whether the request is logged (synthetic probes
 * and rejections follow the runtime flags `log_synthetic_probes` / `log_rejected_requests`) and
 * pushes one small object. Without a database there is no RequestLog and nothing is queued.
 * See docs/request-log.md.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import type { GatewayState } from '../surfaces/state';
import type { LogEntry, Rejection } from './entry';
import { Journal } from './journal';
import { postgresSink } from './postgres-sink';
import { Spool } from './spool';
import { RequestLogWriter } from './writer';

export type { LogEntry, Rejection } from './entry';
export { costOf } from './cost';

/** Runtime flags (the site settings cache). */
export interface RuntimeFlags {
  flag(key: string, fallback: boolean): boolean;
}

/** Status recorded when the client went away before the response ended (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

/** A refused request logged by code outside the inference routes (see {@link RequestLog.logRejection}). */
export interface RejectionInput {
  req: IncomingMessage;
  requestId: string;
  path: string;
  status: number;
  rejection: Rejection;
  client?: ClientIpInfo;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The rejection of a refused request (no caller): the label set by auth code, else missing or invalid key. */
function rejectionOf(state: GatewayState, req: IncomingMessage, status: number): Rejection {
  if (state.rejection) return state.rejection;
  if (status === 401) {
    return req.headers.authorization
      ? { reason: 'invalid_api_key', credentialState: 'unknown' }
      : { reason: 'missing_api_key', credentialState: 'missing' };
  }
  return { reason: state.errorCode ?? 'rejected' };
}

export class RequestLog {
  constructor(readonly writer: RequestLogWriter, private readonly flags: RuntimeFlags) {}

  /**
   * Records an inference request whose response has ended (or whose client left). Called by the
   * hot path: a flag lookup for the rare synthetic or rejected request, and one object pushed.
   */
  finish(req: IncomingMessage, res: ServerResponse, state: GatewayState, path: string): void {
    const clientGone = res.destroyed && !res.writableEnded;
    const status = clientGone ? CLIENT_CLOSED_STATUS : res.statusCode;
    if (state.synthetic && !this.flags.flag('log_synthetic_probes', false)) return;
    const rejected = state.rejection !== undefined || state.caller === undefined;
    if (rejected && !this.flags.flag('log_rejected_requests', false)) return;
    const rejection = rejected ? rejectionOf(state, req, status) : undefined;
    this.writer.push({
      at: Date.now(),
      requestId: state.requestId,
      path,
      surface: state.surface,
      status,
      latencyMs: state.startedAt === undefined ? 0 : performance.now() - state.startedAt,
      firstTokenMs: state.firstTokenMs,
      errorCode: clientGone ? 'client_disconnected' : state.errorCode,
      caller: state.caller,
      model: state.model,
      stream: state.stream === true,
      routing: state.routing,
      usage: state.usage,
      pricing: state.pricing,
      client: state.client,
      numUserTurns: state.numUserTurns,
      numToolCalls: state.numToolCalls,
      images: state.numImages,
      lastUserMessage: state.lastUserMessage,
      userAgent: header(req, 'user-agent'),
      sessionId: header(req, 'x-session-id'),
      synthetic: state.synthetic === true,
      rejection,
    });
  }

  /**
   * Logs a refused request (e.g. `ip_blocked` 429 from the auth-failure blocklist) when
   * `log_rejected_requests` is on; returns whether it was queued. For requests that go through
   * the inference routes, setting `state.rejection` before throwing is enough.
   */
  logRejection(input: RejectionInput): boolean {
    if (!this.flags.flag('log_rejected_requests', false)) return false;
    const entry: LogEntry = {
      at: Date.now(), requestId: input.requestId, path: input.path, surface: undefined, status: input.status, latencyMs: 0,
      firstTokenMs: undefined, errorCode: input.rejection.reason, caller: undefined, model: undefined, stream: false,
      routing: undefined, usage: undefined, pricing: undefined, client: input.client, numUserTurns: undefined,
      numToolCalls: undefined, images: undefined, lastUserMessage: undefined, userAgent: header(input.req, 'user-agent'),
      sessionId: header(input.req, 'x-session-id'), synthetic: false, rejection: input.rejection,
    };
    this.writer.push(entry);
    return true;
  }
}

export interface RequestLogPart {
  requestLog: RequestLog;
  /** Starts flushing (once the database answered). */
  start(): Promise<void>;
  /** Stores what is queued (or spools it) and stops. */
  stop(): Promise<void>;
}

/** The request log of a gateway, or undefined without a database or with `REQUEST_LOG_ENABLED=false`. */
export function createRequestLog(options: { settings: Settings; db: Db | null; log: Logger; flags: RuntimeFlags; cwd: string }): RequestLogPart | undefined {
  const { settings, db, log } = options;
  if (!db || !settings.REQUEST_LOG_ENABLED) return undefined;
  const dir = resolve(options.cwd, settings.REQUEST_LOG_SPOOL_DIR);
  const spool = new Spool({ dir, maxBytes: Math.round(settings.REQUEST_LOG_SPOOL_MAX_MIB * 1024 * 1024) });
  // The journal shares the spool's directory: the spool adopts the journals of dead processes at start.
  const journal = new Journal({ dir, stamp: spool.stamp });
  const writer = new RequestLogWriter({
    sink: postgresSink(db), spool, journal, log,
    batchSize: settings.REQUEST_LOG_BATCH_SIZE,
    flushIntervalMs: settings.REQUEST_LOG_FLUSH_INTERVAL_MS,
    maxQueue: settings.REQUEST_LOG_MAX_QUEUE,
    writeTimeoutMs: settings.REQUEST_LOG_WRITE_TIMEOUT_MS,
    storeMessageText: settings.DB_STORE_FULL_CONTENT,
  });
  return {
    requestLog: new RequestLog(writer, options.flags),
    start: async () => {
      try {
        await spool.open();
      } catch (err) {
        log.error({ err, dir: settings.REQUEST_LOG_SPOOL_DIR }, 'request log spool directory unusable; overflow rows will be dropped');
      }
      writer.start();
    },
    stop: () => writer.stop(),
  };
}
