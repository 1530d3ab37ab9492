/**
 * A process with the real shutdown sequence for test/unit/shutdown.test.ts: logs JSON lines to
 * stdout, says `ready`, and its one shutdown step (`drain`) lasts until a line arrives on stdin,
 * so a test can send signals while the drain is under way.
 */
import { createLogger } from '../../lib/logger';
import { createShutdown } from '../../lib/shutdown';

const log = createLogger({ name: 'shutdown-child', level: 'debug', destination: process.stdout });
const shutdown = createShutdown({ log, graceMs: 120_000 });
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => {
  release = resolve;
});
process.stdin.on('data', () => release());
shutdown.add({ name: 'drain', run: () => released });
log.info('ready');
