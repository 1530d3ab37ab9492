/**
 * A chat-webhook receiver on 127.0.0.1 for alert tests: records every card posted to it, and can
 * answer 200, answer an error status (optionally with `Retry-After`), or hang (hold the request
 * without answering until told to answer again).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedCard {
  path: string;
  text: string;
  blocks: unknown[];
  /** The whole card serialized, for searching. */
  raw: string;
  at: number;
}

export type ReceiverMode = { kind: 'ok' } | { kind: 'status'; status: number; retryAfter?: number } | { kind: 'hang' };

export interface WebhookReceiver {
  url: string;
  /** Cards answered with 200, in arrival order. */
  cards: ReceivedCard[];
  /** Every POST that arrived (also those refused or held), in arrival order. */
  attempts: number;
  /** Requests held open right now (mode `hang`). */
  readonly hanging: number;
  setMode(mode: ReceiverMode): void;
  /** Resolves once a delivered card satisfies `match` (polling every 50 ms), or rejects after `timeoutMs`. */
  waitFor(match: (card: ReceivedCard) => boolean, timeoutMs?: number): Promise<ReceivedCard>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let mode: ReceiverMode = { kind: 'ok' };
  const held = new Set<ServerResponse>();
  const cards: ReceivedCard[] = [];
  const state = { attempts: 0 };
  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    state.attempts += 1;
    if (mode.kind === 'hang') {
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    if (mode.kind === 'status') {
      res.writeHead(mode.status, mode.retryAfter !== undefined ? { 'retry-after': String(mode.retryAfter) } : {});
      res.end('no');
      return;
    }
    const card = JSON.parse(body) as { text: string; blocks: unknown[] };
    cards.push({ path: req.url ?? '', text: card.text, blocks: card.blocks, raw: body, at: Date.now() });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cards,
    get attempts() {
      return state.attempts;
    },
    get hanging() {
      return held.size;
    },
    setMode(next) {
      mode = next;
    },
    async waitFor(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = cards.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching card within ${timeoutMs} ms; received: ${cards.map((c) => c.text).join(' | ') || 'none'}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
