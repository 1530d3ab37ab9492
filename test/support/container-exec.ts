/**
 * TEST HELPER ONLY: a small `SandboxExec` over dockerode for the driver tests, running as root in
 * a `startTestContainer()` container. The product's implementation is `DockerSandbox`
 * (activities/docker/sandbox-container.ts, branch `sandbox`); tests switch to it once merged.
 * Commands run in their own session (`setsid`) so a timeout or an abort kills the whole group.
 */
import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type Docker from 'dockerode';
import { SandboxFileError, type ExecOptions, type ExecResult, type SandboxExec } from '../../activities/agent/types';

interface Demuxer {
  demuxStream(stream: NodeJS.ReadableStream, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): void;
}

export function containerExec(container: Docker.Container): SandboxExec {
  const exec = (command: string[], options: ExecOptions) => runExec(container, command, options);
  return {
    exec,
    async readFile(path, maxBytes) {
      const result = await exec(['cat', '--', path], { timeoutMs: 30_000, maxOutputBytes: maxBytes + 1 });
      if (result.exitCode !== 0) throw new SandboxFileError(`cannot read ${path}: ${result.stderr.trim()}`);
      if (Buffer.byteLength(result.stdout) > maxBytes || result.truncated) throw new SandboxFileError(`${path} is larger than ${maxBytes} bytes`);
      return result.stdout;
    },
    async writeFile(path, content) {
      const script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
      const result = await exec(['sh', '-c', script, 'sh', path], { timeoutMs: 30_000, maxOutputBytes: 4096, stdin: content });
      if (result.exitCode !== 0) throw new SandboxFileError(`cannot write ${path}: ${result.stderr.trim()}`);
    },
  };
}

async function runExec(container: Docker.Container, command: string[], options: ExecOptions): Promise<ExecResult> {
  const pidFile = `/tmp/.test-exec-${randomUUID()}.pid`;
  const wrapped = ['setsid', '-w', 'sh', '-c', `echo $$ > ${pidFile}; exec "$@"`, 'sh', ...command];
  const exec = await container.exec({
    Cmd: wrapped, AttachStdout: true, AttachStderr: true, AttachStdin: options.stdin !== undefined,
    Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`), WorkingDir: options.cwd ?? '/workspace',
  });
  const stream = await exec.start({ hijack: true, stdin: options.stdin !== undefined });
  const out = collector(options.maxOutputBytes, options.onStdout);
  const err = collector(options.maxOutputBytes);
  // docker-modem ships no types; demuxStream splits the multiplexed exec stream into stdout/stderr.
  (container.modem as Demuxer).demuxStream(stream, out.sink, err.sink);
  if (options.stdin !== undefined) stream.end(options.stdin);
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  let timedOut = false;
  let killed = false;
  const kill = () => {
    killed = true;
    void container.exec({ Cmd: ['bash', '-c', `kill -KILL -- -"$(cat ${pidFile})"`] })
      .then((e) => e.start({ Detach: true }))
      .catch(() => undefined);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  const onAbort = () => kill();
  if (options.signal?.aborted) kill();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await ended;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
  const info = await exec.inspect();
  const exitCode = timedOut ? 124 : killed ? 137 : (info.ExitCode ?? -1);
  return { exitCode, stdout: out.text(), stderr: err.text(), truncated: out.truncated() || err.truncated(), timedOut };
}

function collector(maxBytes: number, onChunk?: (chunk: string) => void) {
  const sink = new PassThrough();
  const kept: Buffer[] = [];
  let size = 0;
  let dropped = false;
  const decoder = new StringDecoder('utf8');
  sink.on('data', (chunk: Buffer) => {
    onChunk?.(decoder.write(chunk));
    const room = maxBytes - size;
    if (chunk.length > room) dropped = true;
    const part = chunk.subarray(0, Math.max(0, room));
    kept.push(part);
    size += part.length;
  });
  return { sink, text: () => Buffer.concat(kept).toString('utf8'), truncated: () => dropped };
}
