/**
 * One `docker exec` in a running container, with bounded output: stdout and stderr are kept up
 * to `maxOutputBytes` each (the rest is counted as truncated), stdout chunks can be streamed to a
 * callback, and optional stdin is written and closed (or kept open for a conversation). Resolves with the exit code once the
 * command has finished. Killing is the caller's business (docker exec has no kill API).
 */
import { Writable, type Duplex, type Readable } from 'node:stream';
import { once } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import type Docker from 'dockerode';

export interface ContainerExecOptions {
  cmd: string[];
  /** `uid`, `uid:gid` or a user name; default root. */
  user?: string;
  workingDir?: string;
  env?: Record<string, string>;
  stdin?: string | Buffer;
  /** Keeps stdin open after `stdin`: the callback gets a writer; stdin closes on `end()` or when the command ends. */
  openStdin?: (writer: { write(text: string): void; end(): void }) => void;
  /** Bytes kept of stdout and of stderr each. Default 1 MiB. */
  maxOutputBytes?: number;
  onStdout?: (chunk: string) => void;
  /** Called with the stream as soon as the command runs (to destroy it when giving up). */
  onStarted?: (stream: Duplex) => void;
}

export interface ContainerExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  truncated: boolean;
}

/** A Writable that keeps the first `limit` bytes and notes whether anything was dropped. */
class BoundedSink extends Writable {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly limit: number, private readonly onChunk?: (chunk: Buffer) => void) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.onChunk?.(chunk);
    const room = Math.max(0, this.limit - this.size);
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      const kept = chunk.subarray(0, room);
      this.chunks.push(kept);
      this.size += kept.length;
    }
    callback();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Runs `cmd` in the container and waits for it to finish. */
export async function execInContainer(docker: Docker, containerName: string, options: ContainerExecOptions): Promise<ContainerExecResult> {
  const withStdin = options.stdin !== undefined || options.openStdin !== undefined;
  const exec = await docker.getContainer(containerName).exec({
    Cmd: options.cmd,
    ...(options.user ? { User: options.user } : {}),
    ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
    Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = await exec.start({ hijack: true, stdin: withStdin });
  options.onStarted?.(stream);
  const limit = options.maxOutputBytes ?? 1024 * 1024;
  const decoder = new StringDecoder('utf8');
  const onStdout = options.onStdout;
  const out = new BoundedSink(limit, onStdout ? (chunk) => onStdout(decoder.write(chunk)) : undefined);
  const err = new BoundedSink(limit);
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  docker.modem.demuxStream(stream, out, err);
  if (options.openStdin) {
    if (options.stdin !== undefined) stream.write(options.stdin);
    let open = true;
    const writable = (): boolean => open && !stream.destroyed && !stream.writableEnded;
    void ended.then(() => {
      open = false;
    });
    options.openStdin({
      write: (text) => {
        if (writable()) stream.write(text);
      },
      end: () => {
        if (writable()) stream.end();
        open = false;
      },
    });
  } else if (options.stdin !== undefined) {
    stream.end(options.stdin);
  }
  await ended;
  const rest = decoder.end();
  if (rest && onStdout) onStdout(rest);
  return { exitCode: await exitCodeOf(exec), stdout: out.text(), stderr: err.text(), truncated: out.truncated || err.truncated };
}

/** The exec's exit code; the engine may report it a moment after the stream closes. */
async function exitCodeOf(exec: Docker.Exec): Promise<number> {
  for (let i = 0; i < 100; i += 1) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await new Promise((r) => setTimeout(r, 50));
  }
  return -1;
}

/**
 * Extracts a tar of exactly `length` bytes into a running container, by the container's own `tar`
 * reading it on stdin as root (owners and modes kept). Not the engine's archive upload: that writes
 * the container's layer from the host, which a sandbox with its own kernel (gVisor) caches and does
 * not re-read while it runs; through the sandbox's own processes every runtime sees the files at
 * once. The length is given to `head -c` inside and stdin is never half-closed: an exec's stdin
 * closed right after its last bytes was seen to reach the process empty.
 */
export async function extractTarInContainer(docker: Docker, containerName: string, source: Readable, options: { dir: string; length: number }): Promise<void> {
  const exec = await docker.getContainer(containerName).exec({
    Cmd: ['sh', '-c', 'head -c "$0" | tar -xpf - -C "$1"', String(options.length), options.dir],
    User: '0', AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false,
  });
  const stream = await exec.start({ hijack: true, stdin: true });
  const err = new BoundedSink(16 * 1024);
  docker.modem.demuxStream(stream, new BoundedSink(16 * 1024), err);
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  let sent = 0;
  try {
    for await (const chunk of source) {
      sent += (chunk as Buffer).length;
      if (!stream.write(chunk) && !stream.destroyed) await Promise.race([once(stream, 'drain'), ended]);
      if (stream.destroyed) break;
    }
  } catch (cause) {
    stream.destroy();
    throw new Error(`Streaming the archive into ${containerName} failed: ${(cause as Error).message}`, { cause });
  }
  if (sent !== options.length && !stream.destroyed) stream.destroy();
  await ended;
  const code = await exitCodeOf(exec);
  if (code !== 0 || sent !== options.length) {
    throw new Error(`Extracting the archive into ${containerName}:${options.dir} failed (tar exit ${code}, ${sent} of ${options.length} bytes sent): ${err.text().trim().slice(0, 500)}`);
  }
}
