/**
 * `uploadWithGrant` after a connection reset (docs/object-store.md "The dev S3 server"): a server
 * that refuses a PUT from its headers may close the connection before reading the body, so the
 * uploader sees a reset instead of the 412. The grant's presigned HEAD then decides: an object
 * under the key is `exists` (verified afterwards like any 412), no object leaves the transport
 * error standing (the upload is tried again), and a grant without a HEAD URL keeps the error.
 * The server here is a real HTTP server on loopback that resets every PUT after 64 KiB.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { isTransportError, ObjectVerificationError, uploadWithGrant, type UploadGrant } from '../../../../lib/object-store';

interface ResettingServer {
  server: Server;
  port: number;
  /** Methods and paths of the requests seen, in order. */
  seen: string[];
  /** What a HEAD answers. */
  headStatus: number;
}

/** Resets every PUT's connection after 64 KiB of body (as versitygw does past 256 KiB after an early 412); answers HEAD with `headStatus`. */
async function resettingServer(): Promise<ResettingServer> {
  const state = { seen: [] as string[], headStatus: 404 };
  const server = createServer((req, res) => {
    state.seen.push(`${req.method} ${req.url}`);
    if (req.method === 'HEAD') {
      res.writeHead(state.headStatus, { 'content-length': '0' }).end();
      return;
    }
    let read = 0;
    req.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= 64 * 1024) req.socket.resetAndDestroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, { server, port: (server.address() as AddressInfo).port });
}

function grantFor(port: number, body: Buffer, headUrl: boolean): UploadGrant {
  return {
    kind: 'http-put', key: 'archives/a.tar', length: body.length, sha256: createHash('sha256').update(body).digest('hex'),
    expiresAt: new Date(Date.now() + 60_000).toISOString(), url: `http://127.0.0.1:${port}/bucket/archives/a.tar?put`,
    headers: { 'content-length': String(body.length) },
    ...(headUrl ? { headUrl: `http://127.0.0.1:${port}/bucket/archives/a.tar?head` } : {}),
  };
}

describe('uploadWithGrant after a connection reset', function () {
  this.timeout(20_000);
  let s: ResettingServer;
  const body = randomBytes(2 * 1024 * 1024);

  beforeEach(async () => {
    s = await resettingServer();
  });
  afterEach(async () => {
    s.server.closeAllConnections();
    await new Promise((resolve) => s.server.close(resolve));
  });

  it('answers exists when the grant\'s HEAD finds an object under the key', async () => {
    s.headStatus = 200;
    assert.equal(await uploadWithGrant(grantFor(s.port, body, true), Readable.from([body])), 'exists');
    assert.deepEqual(s.seen, ['PUT /bucket/archives/a.tar?put', 'HEAD /bucket/archives/a.tar?head']);
  });

  it('keeps the transport error when the HEAD finds no object, or is refused', async () => {
    for (const status of [404, 403]) {
      s.headStatus = status;
      s.seen.length = 0;
      await assert.rejects(uploadWithGrant(grantFor(s.port, body, true), Readable.from([body])), (err: unknown) => isTransportError(err));
      assert.deepEqual(s.seen, ['PUT /bucket/archives/a.tar?put', 'HEAD /bucket/archives/a.tar?head'], `HEAD ${status}`);
    }
  });

  it('keeps the transport error for a grant without a HEAD URL', async () => {
    s.headStatus = 200;
    await assert.rejects(uploadWithGrant(grantFor(s.port, body, false), Readable.from([body])), (err: unknown) => isTransportError(err));
    assert.deepEqual(s.seen, ['PUT /bucket/archives/a.tar?put']);
  });
});

describe('isTransportError', () => {
  const withCode = (code: string, message = code): Error => Object.assign(new Error(message), { code });

  it('is a reset, a broken pipe or a hang-up, also as a cause; not a refused connection or a verification failure', () => {
    assert.equal(isTransportError(withCode('ECONNRESET')), true);
    assert.equal(isTransportError(withCode('EPIPE')), true);
    assert.equal(isTransportError(new Error('socket hang up')), true);
    assert.equal(isTransportError(new Error('upload failed', { cause: withCode('ECONNRESET') })), true);
    assert.equal(isTransportError(withCode('ECONNREFUSED')), false);
    assert.equal(isTransportError(new ObjectVerificationError('Upload body is 3 bytes, not the granted 4')), false);
    assert.equal(isTransportError('ECONNRESET'), false);
  });
});
