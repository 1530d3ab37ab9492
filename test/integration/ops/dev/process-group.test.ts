/**
 * `npm start`'s process group with real child processes on 127.0.0.1: a phase starts only once the
 * previous one answers `/health` (a worker that calls the server at its first line never meets a
 * refused connection), Ctrl-C ends with one summary line while drain lines go to the log file
 * only, a process that ignores SIGTERM is killed and its drain lines are shown, and a process that
 * exits on its own stops the others with a non-zero exit code.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ProcessGroup, type ProcessSpec } from '../../../../ops/dev/process-group';
import { freeLoopbackPort as freePort } from '../../../../ops/dev/free-port';

const dir = mkdtempSync(join(tmpdir(), 'process-group-'));

/** A pino-shaped line writer for the scripts. */
const LOG = `const log = (level, msg, extra = {}) => process.stdout.write(JSON.stringify({ level, time: new Date().toISOString(), msg, ...extra }) + '\\n');`;

// A server whose /health answers only after a delay (as a gateway loading its configuration); drains on SIGTERM.
writeFileSync(join(dir, 'server.js'), `${LOG}
const http = require('node:http');
setTimeout(() => {
  const server = http.createServer((req, res) => { res.statusCode = req.url === '/health' ? 200 : 404; res.end(); });
  server.listen(Number(process.env.PORT), '127.0.0.1', () => log('info', 'server listening'));
  process.on('SIGTERM', () => { log('info', 'draining http'); log('info', 'drained'); server.close(() => process.exit(0)); });
}, 400);
process.on('SIGINT', () => {});
`);
// A worker that calls the server once at start, as the host runner's first heartbeat does.
writeFileSync(join(dir, 'worker.js'), `${LOG}
fetch('http://127.0.0.1:' + process.env.PORT + '/health').then(
  (res) => log('info', 'first heartbeat', { status: res.status }),
  (err) => log('warn', 'first heartbeat failed', { err: String(err.cause?.code ?? err) }),
).finally(() => log('info', 'worker polling'));
process.on('SIGTERM', () => { log('info', 'worker drained'); process.exit(0); });
setInterval(() => {}, 1000);
`);
// A process that ignores SIGTERM and says so while "draining".
writeFileSync(join(dir, 'stubborn.js'), `${LOG}
process.on('SIGTERM', () => log('info', 'stubborn still busy'));
log('info', 'stubborn ready');
setInterval(() => {}, 1000);
`);
// A process that dies soon after it is ready.
writeFileSync(join(dir, 'crash.js'), `${LOG}
log('info', 'crash ready');
setTimeout(() => { log('error', 'crashing'); process.exit(3); }, 300);
`);

interface Run {
  group: ProcessGroup;
  output(): string;
  exited: Promise<number>;
}

function group(graceMs = 5000): Run {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => { text += chunk.toString('utf8'); });
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => { resolveExit = resolve; });
  const g = new ProcessGroup({
    root: dir, env: { ...process.env }, logDir: join(dir, 'logs'), readable: true, colour: false, graceMs,
    onExit: resolveExit, stdout: out, stderr: out,
  });
  return { group: g, output: () => text, exited };
}

describe('npm start process group', function () {
  this.timeout(30_000);

  it('starts the workers only once the server answers /health, and stops with one summary line', async () => {
    const port = String(await freePort());
    const run = group();
    const server: ProcessSpec = { name: 'server', script: 'server.js', env: { PORT: port }, ready: { health: `http://127.0.0.1:${port}/health` } };
    const worker: ProcessSpec = { name: 'worker', script: 'worker.js', env: { PORT: port }, ready: { logMessage: 'worker polling' } };
    await run.group.startPhase([server]);
    await run.group.startPhase([worker]);
    const started = run.output();
    assert.match(started, /INFO {2}\[worker\] first heartbeat status=200/);
    assert.doesNotMatch(started, /WARN/, 'no warning on a clean start');
    run.group.stop('SIGINT', 0);
    assert.equal(await run.exited, 0);
    const stopped = run.output().slice(started.length);
    assert.match(stopped, /^\S+ INFO {2}\[start\] stopped server, worker in \d+\.\d s \(full log: .*start-\d{4}-\d\d-\d\d\.log\)\n$/, 'only the summary');
    const file = readFileSync(run.group.logFile, 'utf8');
    assert.match(file, /\[server\] \{"level":"info".*"msg":"draining http"/, 'drain lines are in the log file, as JSON');
    assert.match(file, /\[worker\] .*"msg":"worker drained"/);
  });

  it('kills a process that does not stop within the grace period and shows its drain lines', async () => {
    const run = group(500);
    await run.group.startPhase([{ name: 'stubborn', script: 'stubborn.js', ready: { logMessage: 'stubborn ready' } }]);
    run.group.stop('SIGINT', 0);
    assert.equal(await run.exited, 1, `a killed process makes the stop unclean: ${run.output()}`);
    assert.match(run.output(), /INFO {2}\[stubborn\] stubborn still busy\n.*WARN {2}\[start\] stubborn did not stop within 0\.5 s: killed\n.*stopped stubborn in/);
  });

  it('stops the others and exits non-zero when a process exits on its own', async () => {
    const port = String(await freePort());
    const run = group();
    await run.group.startPhase([{ name: 'server', script: 'server.js', env: { PORT: port }, ready: { health: `http://127.0.0.1:${port}/health` } }]);
    await run.group.startPhase([{ name: 'crash', script: 'crash.js', ready: { logMessage: 'crash ready' } }]);
    assert.equal(await run.exited, 1);
    assert.match(run.output(), /ERROR \[crash\] crashing\n.*ERROR \[start\] crash exited \(3\); stopping the others/);
    assert.match(run.output(), /stopped server, crash in/);
  });

  it('rejects a phase whose process exits before it is ready', async () => {
    const run = group();
    const never: ProcessSpec = { name: 'crash', script: 'crash.js', ready: { logMessage: 'a line it never writes' } };
    await assert.rejects(run.group.startPhase([never]), /crash exited \(3\) before it was ready/);
    assert.equal(await run.exited, 1);
  });
});
