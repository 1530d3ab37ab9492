/**
 * The relay's two ways to reach an MCP server, each bounded so a malicious or broken server cannot
 * hurt the relay (docs/mcp.md "Bounds"): a stdio program launched from an operator template with a
 * minimal environment (no process secrets), whose stdout lines are cut at the answer limit (the
 * program is killed then), and a fetch for streamable HTTP that refuses redirects, refuses private
 * addresses unless allowed, and cuts any response body past the answer limit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { dirname } from 'node:path';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** An MCP server's answer broke a bound or the protocol; the message is safe to show. */
export class McpAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'McpAnswerError';
  }
}

/** The whole environment of a launched stdio program: a fixed PATH (with this Node's directory), locale, and the owner's allowed values. */
export function stdioEnvironment(ownerEnv: Record<string, string>): Record<string, string> {
  return { ...ownerEnv, PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, LANG: 'C.UTF-8', HOME: '/nonexistent' };
}

/** A stdio transport whose lines are bounded; closing kills the program's process group. */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  private buffer: Buffer[] = [];
  private buffered = 0;
  private closed = false;

  constructor(private readonly spec: { command: string; args: string[]; env: Record<string, string>; maxLineBytes: number }) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.spec.command, this.spec.args, { env: this.spec.env, stdio: ['pipe', 'pipe', 'ignore'], detached: true, cwd: '/' });
      this.child = child;
      child.once('error', (err) => (this.closed ? undefined : this.fail(new McpAnswerError(`The MCP program could not start: ${err.message}`), reject)));
      child.once('spawn', () => resolve());
      child.once('exit', () => this.finish());
      child.stdout.on('data', (chunk: Buffer) => this.take(chunk));
      child.stdin.on('error', () => undefined);
    });
  }

  private take(chunk: Buffer): void {
    let start = 0;
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, start)) {
      this.buffer.push(chunk.subarray(start, i));
      this.line(Buffer.concat(this.buffer).toString('utf8'));
      this.buffer = [];
      this.buffered = 0;
      start = i + 1;
    }
    const rest = chunk.subarray(start);
    this.buffered += rest.length;
    if (this.buffered > this.spec.maxLineBytes) {
      this.fail(new McpAnswerError(`The MCP server sent a message larger than ${this.spec.maxLineBytes} bytes`));
      return;
    }
    if (rest.length > 0) this.buffer.push(rest);
  }

  private line(text: string): void {
    if (text.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.onerror?.(new McpAnswerError('The MCP server wrote a line that is not JSON'));
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(parsed);
    if (!message.success) this.onerror?.(new McpAnswerError('The MCP server wrote a message that is not JSON-RPC'));
    else this.onmessage?.(message.data);
  }

  private fail(err: Error, reject?: (err: Error) => void): void {
    this.onerror?.(err);
    reject?.(err);
    void this.close();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.closed) return reject(new McpAnswerError('The MCP program is not running'));
      stdin.write(`${JSON.stringify(message)}\n`, (err) => (err ? reject(err) : resolve()));
    });
  }

  close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }
    this.finish();
    return Promise.resolve();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}

function privateAddress(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224;
  }
  const lower = address.toLowerCase();
  return lower === '::' || lower === '::1' || lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('fe8') || lower.startsWith('fe9') || lower.startsWith('fea') || lower.startsWith('feb');
}

/** Refuses a URL whose host is (or resolves to) a loopback or private address, unless `allowPrivate`. */
export async function assertPublicHost(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  if (addresses.length === 0 || addresses.some(privateAddress)) throw new McpAnswerError(`The MCP URL's host ${host} is a loopback or private address, which the relay does not reach`);
}

/** A body reader that errors once more than `limit` bytes came. */
function boundedBody(body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > limit) controller.error(new McpAnswerError(`The MCP server's answer is larger than ${limit} bytes`));
      else controller.enqueue(chunk);
    },
  }));
}

/** A fetch for the SDK's streamable HTTP transport: no redirects, public hosts only (unless allowed), bounded bodies. */
export function boundedFetch(options: { maxBytes: number; allowPrivate: boolean }): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    await assertPublicHost(url, options.allowPrivate);
    const response = await fetch(input, { ...init, redirect: 'error' });
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > options.maxBytes) {
      await response.body?.cancel();
      throw new McpAnswerError(`The MCP server's answer is larger than ${options.maxBytes} bytes`);
    }
    if (!response.body) return response;
    return new Response(boundedBody(response.body, options.maxBytes), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
