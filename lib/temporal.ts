/**
 * Connections to the Temporal frontend, from settings, and the Schedules workers keep.
 */
import {
  Client, Connection, ScheduleAlreadyRunning, type ScheduleOptions, type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel, type Worker } from '@temporalio/worker';
import { AppError } from './errors';
import type { Logger } from './logger';
import type { Settings } from './settings';

/** A lazily connecting client (the API starts even while Temporal is down). */
export function createTemporalClient(settings: Pick<Settings, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): { client: Client; connection: Connection } {
  const connection = Connection.lazy({ address: settings.TEMPORAL_ADDRESS });
  return { connection, client: new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE }) };
}

/** The connection workers poll with; retries until the server answers or `timeoutMs` passes. */
export async function connectWorker(settings: Pick<Settings, 'TEMPORAL_ADDRESS'>, timeoutMs = 60_000): Promise<NativeConnection> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`Temporal at ${settings.TEMPORAL_ADDRESS} did not answer within ${timeoutMs} ms`, { cause: err });
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** True when the frontend answers `GetSystemInfo` within `timeoutMs`. */
export async function temporalReachable(connection: Pick<Connection, 'withDeadline' | 'workflowService'>, timeoutMs: number): Promise<boolean> {
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  }
}

/**
 * Fails fast with 503 `service_unavailable` when the frontend does not answer a cheap call
 * (`GetSystemInfo`) within `seconds`. For calls whose own deadline is long (an update that waits
 * for a workflow's activity, a workflow run to its end): without the probe an unreachable server
 * would hold the caller's request for that whole deadline. `consequence` completes the message,
 * e.g. "the host action was not carried out and nothing changed". Call it before writing anything.
 */
export async function requireTemporal(client: Client, seconds: number, consequence: string): Promise<void> {
  if (await temporalReachable(client.connection, seconds * 1000)) return;
  throw new AppError('service_unavailable', `Temporal is unreachable (no answer within ${seconds} s): ${consequence}. Try again when Temporal answers`);
}

const pinoLevels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/**
 * SDK warnings that describe this deployment's design rather than a problem, logged at INFO so a
 * clean start shows no warning: the host runner registers activities only (workflows run on the
 * control worker), which the SDK reports as a warning.
 */
const EXPECTED_SDK_WARNINGS: ReadonlySet<string> = new Set(['No workflows registered, not polling for workflow tasks']);

/** The process-log level of one Temporal SDK log entry (its own level, but expected warnings at INFO). */
export function sdkEntryLevel(entry: { level: LogLevel; message: string }): 'trace' | 'debug' | 'info' | 'warn' | 'error' {
  return entry.level === 'WARN' && EXPECTED_SDK_WARNINGS.has(entry.message) ? 'info' : pinoLevels[entry.level];
}

/** Sends the Temporal SDK's own logs (worker lifecycle, core) to the process logger. Call once, first. */
export function installTemporalRuntime(log: Logger, level: LogLevel = 'INFO'): void {
  Runtime.install({
    // The process's own shutdown sequence (lib/shutdown.ts) owns the signals and stops workers in order.
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      log[sdkEntryLevel(entry)]({ source: 'temporal', ...entry.meta }, entry.message);
    }),
  });
}

/** Stops a worker if it is still running and waits for its run loop to finish. */
export async function stopWorker(worker: Worker, running: Promise<void>): Promise<void> {
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
}

/**
 * Creates the Temporal Schedule `options.scheduleId`, or brings an existing one up to `options`'
 * definition (spec, policies, action) while keeping its state (paused, note) as an operator left
 * it: the call a worker makes at every start, so a redeploy changes the definition and nothing
 * else. Answers the Schedule's id.
 */
export async function ensureSchedule<W extends Workflow>(client: Client, options: ScheduleOptions<ScheduleOptionsStartWorkflowAction<W>>): Promise<string> {
  const { scheduleId, spec, policies, action } = options;
  try {
    await client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update<W>((previous) => ({ ...previous, spec, ...(policies ? { policies } : {}), action }));
  }
  return scheduleId;
}
