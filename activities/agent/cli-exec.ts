/**
 * Runs a coding CLI in the member's container and hands its stdout to `onLine` line by line as it
 * streams, in order (each line's work finishes before the next starts; a failure of it is raised
 * after the run). Shared by the JSON-lines CLI driver and the native drivers. Aborting the turn
 * kills the CLI; the turn's deadline bounds it.
 */
import { LineSplitter, type SplitLine } from './cli-lines';
import { redactSecret } from './driver-text';
import { DriverAbortedError } from './retry-policy';
import type { DriverInput, ExecResult, StdinWriter } from './types';

export async function execCliLines(
  input: DriverInput, command: string[],
  options: { maxOutputBytes: number; env: Record<string, string>; cwd?: string; timeLimitMessage: string; stdin?: string; openStdin?: (writer: StdinWriter) => void },
  onLine: (line: SplitLine) => Promise<void> | void,
): Promise<ExecResult> {
  if (input.signal.aborted) throw new DriverAbortedError();
  const timeoutMs = input.deadline - Date.now();
  if (timeoutMs <= 0) throw new Error('The turn reached its time limit.');
  const splitter = new LineSplitter();
  let chain = Promise.resolve();
  const handle = (lines: SplitLine[]) => {
    for (const line of lines) chain = chain.then(() => onLine(line));
    chain.catch(() => undefined); // handled: the failure is rethrown by `await chain` below
  };
  let exec: ExecResult;
  try {
    exec = await input.sandbox.exec(command, {
      timeoutMs, maxOutputBytes: options.maxOutputBytes, signal: input.signal, stdin: options.stdin ?? input.prompt,
      ...(options.openStdin ? { openStdin: options.openStdin } : {}), env: options.env, ...(options.cwd ? { cwd: options.cwd } : {}), onStdout: (chunk) => handle(splitter.push(chunk)),
    });
  } catch (err) {
    await chain.catch(() => undefined);
    if (input.signal.aborted) throw new DriverAbortedError();
    throw err;
  }
  handle(splitter.end());
  await chain;
  if (input.signal.aborted) throw new DriverAbortedError();
  if (exec.timedOut) throw new Error(options.timeLimitMessage);
  return exec;
}

/** A CLI might echo its environment; the grant never reaches the event log. */
export function redactPayload(input: DriverInput, payload: Record<string, unknown>): Record<string, unknown> {
  const text = JSON.stringify(payload);
  return input.grantToken && text.includes(input.grantToken) ? (JSON.parse(redactSecret(text, input.grantToken)) as Record<string, unknown>) : payload;
}
