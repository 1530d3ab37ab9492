/**
 * Runs the benchmark upstream as its own process so it can be pinned to a core:
 * `taskset -c 0 node --import tsx bench/gateway/upstream-main.ts [--port N] [--sse-batch N]`.
 * Prints one line `{"port":N}` when listening; exits on SIGTERM/SIGINT or when stdin closes
 * (the parent went away).
 */
import { parseArgs } from 'node:util';
import { startBenchUpstream } from './upstream';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string', default: '0' }, 'sse-batch': { type: 'string', default: '1' } },
  });
  const upstream = await startBenchUpstream({ port: Number(values.port), sseBatch: Number(values['sse-batch']) });
  process.stdout.write(`${JSON.stringify({ port: upstream.port })}\n`);
  const stop = (): void => {
    void upstream.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  process.stdin.resume();
}

main().catch((err: unknown) => {
  process.stderr.write(`bench upstream failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
