/**
 * `npm start`'s terminal lines: pino JSON becomes `HH:MM:SS LEVEL [process] message key=value…`,
 * coloured by level on a terminal; other lines pass through; non-terminal output stays JSON.
 */
import assert from 'node:assert/strict';
import { formatLine, levelLabel, parsePinoLine } from '../../../../ops/dev/log-format';

const TIME = Date.UTC(2026, 10, 28, 9, 5, 7);
const readable = { process: 'gateway', colour: false, clock: 'utc' as const, readable: true };

describe('npm start log format', () => {
  it('turns a pino line into time, level, process, message and the remaining fields', () => {
    const line = JSON.stringify({ level: 30, time: TIME, pid: 42, hostname: 'h', name: 'gateway', msg: 'gateway listening', url: 'http://0.0.0.0:8080', database: true });
    assert.equal(formatLine(line, readable), '09:05:07 INFO  [gateway] gateway listening url=http://0.0.0.0:8080 database=true');
  });

  it('reads the level labels and ISO times the processes write (lib/logger.ts)', () => {
    const line = JSON.stringify({ level: 'warn', time: new Date(TIME).toISOString(), service: 'gateway', name: 'gateway', msg: 'm', event: 'e' });
    assert.equal(formatLine(line, readable), '09:05:07 WARN  [gateway] m event=e');
    assert.equal(formatLine('{"level":"loud","msg":"m"}', readable), '[gateway] {"level":"loud","msg":"m"}', 'an unknown label is not a pino line');
  });

  it('quotes strings with spaces, shows objects as compact JSON and cuts long values', () => {
    const line = JSON.stringify({ level: 40, time: TIME, msg: 'host heartbeat refused', reason: 'two words', detail: { a: 1 }, long: 'x'.repeat(500) });
    const out = formatLine(line, readable);
    assert.match(out, /^09:05:07 WARN {2}\[gateway\] host heartbeat refused reason="two words" detail=\{"a":1\} long=x+…$/);
    assert.ok(out.length < 320, 'a long value is cut');
  });

  it('puts an error\'s message inline and its stack on indented lines', () => {
    const line = JSON.stringify({ level: 50, time: TIME, msg: 'failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)' } });
    assert.equal(formatLine(line, readable), '09:05:07 ERROR [gateway] failed err=boom\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)');
  });

  it('folds an http_request line into method, path, status and duration', () => {
    const line = JSON.stringify({
      level: 'info', time: TIME, event: 'http_request', msg: 'http_request', request_id: 'r1', method: 'POST', path: '/v1/chat/completions',
      status: 200, duration_ms: 12.345, completed: true, remote_ip: 'unknown', peer_ip: '127.0.0.1', ip_source: 'socket', user_agent: 'node', host: 'h', error_code: 'x',
    });
    assert.equal(formatLine(line, readable), '09:05:07 INFO  [gateway] POST /v1/chat/completions → 200 12.3 ms error_code=x');
  });

  it('does not repeat a value the message already says, and indents a multi-line message', () => {
    const line = JSON.stringify({ level: 30, time: TIME, event: 'loaded', msg: 'Registered 0 routes from /a/models.yaml', path: '/a/models.yaml', models: 0 });
    assert.equal(formatLine(line, readable), '09:05:07 INFO  [gateway] Registered 0 routes from /a/models.yaml event=loaded models=0');
    assert.equal(formatLine(JSON.stringify({ level: 30, time: TIME, msg: 'one\ntwo' }), readable), '09:05:07 INFO  [gateway] one\n    two');
  });

  it('colours by level on a terminal', () => {
    const warn = formatLine(JSON.stringify({ level: 40, time: TIME, msg: 'careful' }), { ...readable, colour: true });
    assert.ok(warn.includes('\u001b[33mWARN \u001b[0m'), 'the level in yellow');
    assert.ok(warn.includes('\u001b[33mcareful\u001b[0m'), 'a warning\'s message in yellow');
    const info = formatLine(JSON.stringify({ level: 30, time: TIME, msg: 'fine' }), { ...readable, colour: true });
    assert.ok(info.includes('\u001b[32mINFO \u001b[0m'));
    assert.ok(info.endsWith(' fine'), 'an info message is not coloured');
  });

  it('passes other lines through after the process prefix, and keeps JSON when not readable', () => {
    assert.equal(formatLine('plain text from a tool', readable), '[gateway] plain text from a tool');
    assert.equal(formatLine('{not json', readable), '[gateway] {not json');
    assert.equal(formatLine('{"no":"level"}', readable), '[gateway] {"no":"level"}');
    const json = JSON.stringify({ level: 30, time: TIME, msg: 'x' });
    assert.equal(formatLine(json, { ...readable, readable: false }), `[gateway] ${json}`);
  });

  it('parses only JSON objects with a numeric level and names levels', () => {
    assert.equal(parsePinoLine('[1,2]'), undefined);
    assert.equal(parsePinoLine('{"level":true}'), undefined);
    assert.deepEqual(parsePinoLine('{"level":"info"}'), { level: 30 });
    assert.deepEqual(parsePinoLine('{"level":30,"msg":"m"}'), { level: 30, msg: 'm' });
    assert.deepEqual([10, 20, 30, 40, 50, 60].map(levelLabel), ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']);
  });
});
