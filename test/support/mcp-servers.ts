/**
 * Real MCP servers for tests: the npm packages `@modelcontextprotocol/server-everything` (stdio and
 * streamable HTTP) and `@modelcontextprotocol/server-filesystem`, plus a hostile streamable-HTTP
 * server on loopback whose tools hang, answer too much, or answer what is not MCP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { unusedLoopbackPort } from './ports';

export const EVERYTHING_BIN = resolve('node_modules/.bin/mcp-server-everything');
export const FILESYSTEM_BIN = resolve('node_modules/.bin/mcp-server-filesystem');

/** `AGENT_MCP_STDIO_TEMPLATES` with `everything` (stdio) and, given a directory, `filesystem` serving it. */
export function stdioTemplates(filesystemDir?: string): string {
  return JSON.stringify({
    everything: { command: EVERYTHING_BIN, args: ['stdio'], env_names: ['EVERYTHING_NOTE'] },
    ...(filesystemDir ? { filesystem: { command: FILESYSTEM_BIN, args: [filesystemDir] } } : {}),
  });
}

export interface RunningMcpServer {
  url: string;
  close(): Promise<void>;
}

/** `mcp-server-everything streamableHttp` on a free loopback port (it reads `PORT`). */
export async function startEverythingHttp(): Promise<RunningMcpServer> {
  const port = await unusedLoopbackPort();
  const child: ChildProcess = spawn(EVERYTHING_BIN, ['streamableHttp'], { env: { PATH: process.env.PATH ?? '', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((ok, fail) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`mcp-server-everything did not start: ${seen}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('listening on port')) {
        clearTimeout(timer);
        ok();
      }
    });
    child.once('exit', (code) => fail(new Error(`mcp-server-everything exited ${code}: ${seen}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () => new Promise<void>((ok) => {
      if (child.exitCode !== null) return ok();
      child.once('exit', () => ok());
      child.kill('SIGKILL');
    }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

/** Tools of the hostile server: `hang` never answers, `huge` answers 4 MiB, `malformed` answers a result of the wrong shape, `garbage` answers text that is not JSON. */
export const HOSTILE_TOOLS = ['hang', 'huge', 'malformed', 'garbage', 'fine'] as const;

/** A streamable-HTTP MCP server (JSON answers, no sessions) whose tool calls misbehave by name. */
export async function startHostileMcpServer(): Promise<RunningMcpServer & { calls: string[] }> {
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const message = JSON.parse(text) as { id?: number; method: string; params?: { name?: string } };
      const answer = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'initialize') return answer({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } });
      if (message.method === 'tools/list') {
        return answer({ tools: HOSTILE_TOOLS.map((name) => ({ name, description: `the ${name} tool\u0000`, inputSchema: { type: 'object' } })) });
      }
      const tool = message.params?.name ?? '';
      calls.push(tool);
      if (tool === 'hang') return; // never answers
      if (tool === 'huge') return answer({ content: [{ type: 'text', text: 'x'.repeat(4 * 1024 * 1024) }] });
      if (tool === 'malformed') return answer({ content: 'not a list of content' });
      if (tool === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('this is not JSON-RPC');
      return answer({ content: [{ type: 'text', text: 'fine' }] });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () => new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}
