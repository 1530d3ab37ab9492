/**
 * The request log (`api_logs`; docs/request-log.md): one row per inference request, written off the
 * request path by the batching writer. {@link RequestLog.finish} is what the hot path calls when a
 * request's response has ended; it only decides whether the request is logged (synthetic probes and
 * rejections follow the runtime flags `log_synthetic_probes` / `log_rejected_requests`) and pushes
 * the request's record. Without a database there is no RequestLog and nothing is queued. See
 * docs/request-log.md.
 */
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import { RequestRecord, type Rejection } from '../surfaces/request-record';
import { Journal } from './journal';
import { postgresSink } from './postgres-sink';
import { Spool } from './spool';
import { RequestLogWriter } from './writer';

export { CLIENT_CLOSED_STATUS, type Rejection } from '../surfaces/request-record';
export { costOf } from './cost';

/** Runtime flags (the site settings cache). */
export interface RuntimeFlags {
  flag(key: string, fallback: boolean): boolean;
}

/** A refused request logged by code outside the inference routes (see {@link RequestLog.logRejection}). */
export interface RejectionInput {
  req: IncomingMessage;
  requestId: string;
  path: string;
  status: number;
  rejection: Rejection;
  client?: ClientIpInfo;
}

export class RequestLog {
  /** `log`: the root logger of records this log builds itself ({@link logRejection}). */
  constructor(readonly writer: RequestLogWriter, private readonly flags: RuntimeFlags, private readonly log: Logger) {}

  /**
   * Queues the record of an inference request whose response has ended (after
   * {@link RequestRecord.end}). Called by the hot path: a flag lookup for the rare synthetic or
   * rejected request, and the record itself pushed (no copy).
   */
  finish(record: RequestRecord): void {
    if ((record.synthetic && !this.flags.flag('log_synthetic_probes', false)) || (record.rejected && !this.flags.flag('log_rejected_requests', false))) {
      record.releaseResponse();
      return;
    }
    this.writer.push(record);
  }

  /**
   * Logs a refused request (e.g. `ip_blocked` 429 from the auth-failure blocklist) when
   * `log_rejected_requests` is on; returns whether it was queued. For requests that go through
   * the inference routes, setting `rejection` on their record before throwing is enough.
   */
  logRejection(input: RejectionInput): boolean {
    if (!this.flags.flag('log_rejected_requests', false)) return false;
    const record = new RequestRecord(input.requestId, this.log, input.path, input.client, 0);
    record.rejection = input.rejection;
    record.errorCode = input.rejection.reason;
    record.status = input.status;
    record.at = Date.now();
    record.userAgent = typeof input.req.headers['user-agent'] === 'string' ? input.req.headers['user-agent'] : undefined;
    record.sessionId = typeof input.req.headers['x-session-id'] === 'string' ? input.req.headers['x-session-id'] : undefined;
    this.writer.push(record);
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
    requestLog: new RequestLog(writer, options.flags, log),
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
