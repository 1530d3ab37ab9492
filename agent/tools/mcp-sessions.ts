/**
 * The relay's sessions with MCP servers, through the official SDK client (docs/mcp.md "Sessions"):
 * one session per (connection version, chat), so one chat's slow or hung server never holds up
 * another chat's calls; a session unused for `idleMs` is closed (a stdio program is killed), and so is
 * one whose call failed at the transport or ran past its deadline, so the next call starts fresh.
 * Every connect and call has a deadline; answers are bounded by the transports
 * (bounded-transports.ts) and shape-checked by the SDK (a malformed answer is an error).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { BoundedStdioTransport, boundedFetch, stdioEnvironment } from './bounded-transports';
import { snapshotOf, type CapabilitySnapshot } from './capabilities';

/** Where a session goes, with the connection's decrypted secrets. */
export interface McpTarget {
  /** Distinguishes sessions: the connection id, its last change and the chat. */
  key: string;
  transport: 'streamable_http' | 'stdio';
  endpointUrl: string | null;
  launch: { command: string; args: string[] } | null;
  secrets: { headers: Record<string, string>; env: Record<string, string> };
}

export interface McpSessionLimits {
  maxAnswerBytes: number;
  allowPrivate: boolean;
  idleMs: number;
  /** Most sessions open at once; the least recently used is closed past it. */
  maxSessions?: number;
}

interface Session {
  client: Promise<Client>;
  idle?: NodeJS.Timeout;
  usedAt: number;
}

const CLIENT_INFO = { name: 'agent-control-plane-relay', version: '1' };

/** The pool of open sessions of one process. */
export class McpSessionPool {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly limits: McpSessionLimits) {}

  private transportOf(target: McpTarget): Transport {
    if (target.transport === 'stdio') {
      if (!target.launch) throw new Error('stdio connection without a launch specification');
      return new BoundedStdioTransport({ ...target.launch, env: stdioEnvironment(target.secrets.env), maxLineBytes: this.limits.maxAnswerBytes });
    }
    return new StreamableHTTPClientTransport(new URL(target.endpointUrl ?? ''), {
      requestInit: { headers: target.secrets.headers, redirect: 'error' },
      fetch: boundedFetch({ maxBytes: this.limits.maxAnswerBytes, allowPrivate: this.limits.allowPrivate }),
      reconnectionOptions: { maxReconnectionDelay: 1000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
    });
  }

  private open(target: McpTarget, timeoutMs: number): Session {
    const existing = this.sessions.get(target.key);
    if (existing) return existing;
    this.evictOverflow();
    const client = new Client(CLIENT_INFO);
    const session: Session = { usedAt: Date.now(), client: Promise.resolve(client) };
    session.client = (async () => {
      const transport = this.transportOf(target);
      transport.onclose = () => this.drop(target.key, session);
      await client.connect(transport, { timeout: timeoutMs });
      return client;
    })();
    session.client.catch(() => this.close(target.key, session));
    this.sessions.set(target.key, session);
    return session;
  }

  private evictOverflow(): void {
    const max = this.limits.maxSessions ?? 256;
    if (this.sessions.size < max) return;
    const oldest = [...this.sessions.entries()].sort((a, b) => a[1].usedAt - b[1].usedAt)[0];
    if (oldest) this.close(oldest[0], oldest[1]);
  }

  private drop(key: string, session: Session): void {
    if (this.sessions.get(key) === session) this.sessions.delete(key);
    clearTimeout(session.idle);
  }

  /** Closes one session (kills its program). */
  private close(key: string, session: Session): void {
    this.drop(key, session);
    session.client.then((c) => c.close(), () => undefined).catch(() => undefined);
  }

  private async use<T>(target: McpTarget, timeoutMs: number, work: (client: Client) => Promise<T>): Promise<T> {
    const session = this.open(target, timeoutMs);
    clearTimeout(session.idle);
    session.usedAt = Date.now();
    try {
      return await work(await session.client);
    } catch (err) {
      this.close(target.key, session);
      throw err;
    } finally {
      if (this.sessions.get(target.key) === session) {
        session.idle = setTimeout(() => this.close(target.key, session), this.limits.idleMs);
        session.idle.unref();
      }
    }
  }

  /** Connects (when needed) and lists the server's tools (all pages, bounded by the snapshot's limits). */
  async discover(target: McpTarget, timeoutMs: number): Promise<CapabilitySnapshot> {
    const deadline = Date.now() + timeoutMs;
    return this.use(target, timeoutMs, async (client) => {
      const tools: Array<{ name: unknown; description?: unknown; inputSchema?: unknown }> = [];
      let cursor: string | undefined;
      for (let page = 0; page < 8; page += 1) {
        const answer = await client.listTools(cursor ? { cursor } : {}, { timeout: Math.max(1, deadline - Date.now()) });
        tools.push(...answer.tools);
        cursor = answer.nextCursor;
        if (!cursor || tools.length > 256) break;
      }
      return snapshotOf(tools, client.getServerVersion());
    });
  }

  /** Calls a tool within `timeoutMs` (connect included); a failed or late call closes the session. */
  async callTool(target: McpTarget, tool: string, args: Record<string, unknown>, options: { timeoutMs: number; signal?: AbortSignal }): Promise<CallToolResult> {
    const deadline = Date.now() + options.timeoutMs;
    return this.use(target, options.timeoutMs, async (client) => {
      const left = Math.max(1, deadline - Date.now());
      const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: left, maxTotalTimeout: left, ...(options.signal ? { signal: options.signal } : {}) });
      return result as CallToolResult;
    });
  }

  /** A fetch for OAuth requests (discovery, registration, token exchange and refresh) bound like the sessions' and cut after `timeoutMs`. */
  oauthFetch(timeoutMs: number): typeof fetch {
    const bounded = boundedFetch({ maxBytes: this.limits.maxAnswerBytes, allowPrivate: this.limits.allowPrivate });
    return (input, init) => bounded(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  }

  /** Closes every session (process shutdown, tests). */
  closeAll(): void {
    for (const [key, session] of [...this.sessions.entries()]) this.close(key, session);
  }

  /** How many sessions are open (tests and metrics). */
  get size(): number {
    return this.sessions.size;
  }
}
