/**
 * Writes a JSON response straight to a Node response (outside any framework): serialized once,
 * explicit type and length, one write.
 */
import type { ServerResponse } from 'node:http';

export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}
