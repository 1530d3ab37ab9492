/**
 * The lean upstream client's response-head parser (`parseResponseHead`): framing (length,
 * chunked), connection reuse (version, `Connection`, `Keep-Alive: timeout=`), header names in any
 * case and with stray spaces, the header list of refused answers, and every malformed head it
 * refuses. Pure function over bytes; the pool's own tests cover it on sockets.
 */
import assert from 'node:assert/strict';
import { Http1Error, parseResponseHead, type ResponseHead } from '../../gateway/upstream/http1-wire';

function parse(text: string): ResponseHead {
  const head = parseResponseHead(Buffer.from(text, 'latin1'));
  assert.ok(head && !(head instanceof Http1Error), `parsed: ${head instanceof Http1Error ? head.message : 'incomplete'}`);
  return head;
}

function refused(text: string): Http1Error {
  const head = parseResponseHead(Buffer.from(text, 'latin1'));
  assert.ok(head instanceof Http1Error, `refused: ${JSON.stringify(text.slice(0, 80))}`);
  return head;
}

const framing = (h: ResponseHead) => ({ statusCode: h.statusCode, keepAlive: h.keepAlive, length: h.length, chunked: h.chunked, keepAliveHintMs: h.keepAliveHintMs, bodyStart: h.bodyStart });

describe('http1 response head', () => {
  it('reads status, length, reuse and where the body starts', () => {
    const text = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 12\r\nDate: Sat, 21 Nov 2026 23:43:11 GMT\r\n\r\n{"ok":true}';
    assert.deepEqual(framing(parse(text)), { statusCode: 200, keepAlive: true, length: 12, chunked: false, keepAliveHintMs: undefined, bodyStart: text.indexOf('{') });
    assert.deepEqual(framing(parse('HTTP/1.1 204\r\n\r\n')), { statusCode: 204, keepAlive: true, length: undefined, chunked: false, keepAliveHintMs: undefined, bodyStart: 16 });
    assert.equal(parse('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').length, 0);
  });

  it('is incomplete until the blank line arrives', () => {
    for (const text of ['', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r']) {
      assert.equal(parseResponseHead(Buffer.from(text)), undefined, JSON.stringify(text));
    }
  });

  it('decides reuse from the version, Connection and Keep-Alive', () => {
    assert.equal(parse('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n').keepAlive, false);
    assert.equal(parse('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n').keepAlive, true);
    assert.equal(parse('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n').keepAlive, false);
    assert.equal(parse('HTTP/1.1 200 OK\r\nconnection: Upgrade, CLOSE\r\n\r\n').keepAlive, false);
    assert.equal(parse('HTTP/1.1 200 OK\r\nConnection: closed\r\n\r\n').keepAlive, true, 'a token that only starts with close');
    assert.equal(parse('HTTP/1.1 200 OK\r\nKEEP-ALIVE: timeout=5, max=100\r\n\r\n').keepAliveHintMs, 5000);
    assert.equal(parse('HTTP/1.1 200 OK\r\nKeep-Alive: max=100\r\n\r\n').keepAliveHintMs, undefined);
    const reuse = (value: string, version = '1.1') => parse(`HTTP/${version} 200 OK\r\nConnection:${value}\r\n\r\n`).keepAlive;
    assert.deepEqual(
      [reuse(' keep-alive', '1.0'), reuse('KEEP-ALIVE ', '1.0'), reuse(' close '), reuse('close, TE'), reuse('TE,  keep-alive', '1.0'), reuse('upgrade', '1.0'), reuse('upgrade'), reuse('keep-alive, close')],
      [true, true, false, false, true, false, true, false],
    );
    const hint = (value: string) => parse(`HTTP/1.1 200 OK\r\nKeep-Alive: ${value}\r\n\r\n`).keepAliveHintMs;
    assert.deepEqual(
      [hint('timeout=5'), hint('Timeout=65, max=1000'), hint('max=100, timeout=7'), hint('timeout = 9'), hint('timeout=4x'), hint('timeout='), hint('timeout=x1'), hint('timeout=12345678901234567890')],
      [5000, 65000, 7000, 9000, 4000, undefined, undefined, Number('12345678901234567890') * 1000],
    );
  });

  it('reads chunked framing from the last transfer coding', () => {
    assert.equal(parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n').chunked, true);
    assert.equal(parse('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n').chunked, true);
    assert.equal(parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n').chunked, false);
  });

  it('matches header names in any case, ignores spaces around names and values, and skips the rest by length', () => {
    const h = parse('HTTP/1.1 200 OK\r\n  CONTENT-LENGTH  :   7  \r\nX-Content-Length: 9\r\ncontent-lengthx: 8\r\nX: \r\n\r\n1234567');
    assert.equal(h.length, 7);
    assert.equal(parse('HTTP/1.1 200 OK\r\nX-Obs: caf\xe9 \xa0\r\nContent-Length: 1\r\n\r\nx').length, 1, 'latin1 bytes in a value');
  });

  it('keeps duplicates of one length, refuses conflicting ones', () => {
    assert.equal(parse('HTTP/1.1 200 OK\r\nContent-Length: 4\r\ncontent-length: 4\r\n\r\n').length, 4);
    refused('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n');
  });

  it('lists the headers of a refused answer, in order, with trimmed values', () => {
    const h = parse('HTTP/1.1 429 Too Many Requests\r\nRetry-After:  7 \r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    assert.equal(h.statusCode, 429);
    assert.deepEqual(h.raw, ['Retry-After', '7', 'Content-Type', 'application/json', 'Content-Length', '2']);
    assert.deepEqual(parse('HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n').raw, ['Location', '/x']);
  });

  it('refuses malformed heads', () => {
    const cases: Array<[string, string]> = [
      ['HTTX/1.1 200 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/2 200 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 20 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 200OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 2000 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 2x0 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 200 O\nK\r\n\r\n', 'malformed status line'],
      ['http/1.1 200 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.2 200 OK\r\n\r\n', 'malformed status line'],
      ['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', 'malformed header line'],
      ['HTTP/1.1 200 OK\r\n:starts with a colon\r\n\r\n', 'malformed header line'],
      ['HTTP/1.1 200 OK\r\nContent-Length: 1\r\nbroken\r\n\r\n', 'malformed header line'],
      ['HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n', 'invalid Content-Length'],
      ['HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', 'invalid Content-Length'],
      ['HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n', 'invalid Content-Length'],
      ['HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456\r\n\r\n', 'invalid Content-Length'],
      ['HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n', 'both Content-Length and chunked framing'],
      ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n', 'unexpected protocol switch'],
    ];
    for (const [text, message] of cases) assert.equal(refused(text).message, message, JSON.stringify(text));
  });

  it('refuses a head over 64 KiB, complete or not', () => {
    assert.equal(refused(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(70 * 1024)}\r\n\r\n`).code, 'UND_ERR_HEADERS_OVERFLOW');
    assert.equal(refused(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(70 * 1024)}`).code, 'UND_ERR_HEADERS_OVERFLOW');
    assert.equal(parse(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(60 * 1024)}\r\n\r\n`).statusCode, 200);
  });
});
