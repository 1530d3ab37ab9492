/**
 * The floor for any Node gateway on this machine: a proxy with no logic at all (no framework,
 * routing, validation or logging). Non-streaming answers are parsed and re-serialized, as any
 * gateway that reads usage must; streams are piped. Measured by `npm run bench:gateway` as the
 * "bare Node proxy (floor)" row. Usage: `node --import tsx bench/gateway/bare-proxy.ts <upstream origin> <port>`.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [upstreamOrigin, port] = process.argv.slice(2);
if (!upstreamOrigin || !port) throw new Error('usage: bare-proxy.ts <upstream origin> <port>');
const pool = new Pool(upstreamOrigin);

const server = createServer((req, res) => {
  if (req.url === '/health') {
    res.end('{"status":"healthy"}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
      const upstream = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for await (const chunk of upstream.body) res.write(chunk);
        res.end();
        return;
      }
      const out = JSON.stringify(JSON.parse(await upstream.body.text()));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    })().catch(() => res.destroy());
  });
});
server.listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
