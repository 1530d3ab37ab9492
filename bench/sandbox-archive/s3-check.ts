/**
 * `npx tsx bench/sandbox-archive/s3-check.ts --server <name>` (servers.ts): the S3 behaviours the
 * archive contract needs (docs/object-store.md), checked against a freshly started server through
 * our own code (`S3ObjectStore.grantUpload`, `uploadWithGrant`, `verify`, `get`), with the raw
 * responses printed: (a) a presigned PUT with the full-object SHA-256 and `If-None-Match: *` in
 * its signed headers stores the object; (b) the same PUT again is 412; (c) other bytes of the
 * granted length are 400 `BadDigest` and store nothing; (d) HEAD with checksum mode returns the
 * stored SHA-256 and length; (e) GET streams the body; (f) SIGTERM stops the server promptly.
 * Also: a bent grant is 403, and an object overwritten without a checksum is not verified.
 * Prints PASS/FAIL per check; exits 1 on any FAIL.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ObjectVerificationError, S3ObjectStore, uploadWithGrant, type UploadGrant } from '../../lib/object-store';
import type { S3Credentials } from '../../ops/dev/s3-server';
import { serversFromArgs, startArchiveServer } from './servers';

const MIB = 1024 * 1024;

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * A PUT with exactly these headers through node:http (what a host runner sends). A server may
 * answer and close before the body is sent: a response within 200 ms of the broken pipe wins;
 * without one the result is status 0 and the socket error.
 */
function rawPut(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(new URL(url), { method: 'PUT', headers }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; }).on('end', () => resolve({ status: res.statusCode ?? 0, text })).on('error', reject);
    });
    req.on('error', (err) => setTimeout(() => { if (!answered) resolve({ status: 0, text: err.message }); }, 200));
    req.end(body);
  });
}

function httpGrant(grant: UploadGrant): UploadGrant & { kind: 'http-put' } {
  if (grant.kind !== 'http-put') throw new Error('not an http-put grant');
  return grant;
}

const results: Array<{ name: string; ok: boolean }> = [];
function check(name: string, ok: boolean, detail: string): void {
  results.push({ name, ok });
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}\n  ${detail.replace(/\n/g, '\n  ')}`);
}

async function main(): Promise<void> {
  const servers = serversFromArgs(process.argv);
  if (servers.length !== 1) throw new Error('one --server at a time');
  const server = servers[0]!;
  const dataDir = mkdtempSync(join(tmpdir(), 's3-check-'));
  const credentials: S3Credentials = { accessKeyId: `check${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') };
  const started = await startArchiveServer(server, dataDir, credentials);
  const bucket = 'check';
  const client = new S3Client({ endpoint: started.endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const store = new S3ObjectStore({ endpoint: started.endpoint, region: 'us-east-1', bucket, forcePathStyle: true, credentials });
    const bytes = randomBytes(4 * MIB + 123);
    const expected = { length: bytes.length, sha256: sha256(bytes) };

    // (a) the presigned PUT as a host runner sends it
    const grant = httpGrant(await store.grantUpload('archives/a.tar', expected));
    const signed = new URL(grant.url).searchParams.get('X-Amz-SignedHeaders') ?? '';
    const a = await rawPut(grant.url, grant.headers, bytes);
    const viaUpload = await uploadWithGrant(await store.grantUpload('archives/a2.tar', expected), Readable.from([bytes]));
    check('(a) presigned PUT, signed checksum + If-None-Match: *, fixed length', a.status === 200 && viaUpload === 'created',
      `signed headers: ${signed}\nrequest headers: ${JSON.stringify(grant.headers)}\nraw: ${a.status} ${JSON.stringify(a.text)}\nuploadWithGrant (other key): ${viaUpload}`);

    // (b) the same PUT again: 412 (five tries; a reset without a response is counted, not judged here)
    const tries = [];
    for (let i = 0; i < 5; i += 1) tries.push(await rawPut(grant.url, grant.headers, bytes));
    const answered = tries.filter((t) => t.status !== 0);
    const small = randomBytes(100_000);
    const smallExpected = { length: small.length, sha256: sha256(small) };
    const smallGrant = httpGrant(await store.grantUpload('archives/small.tar', smallExpected));
    await rawPut(smallGrant.url, smallGrant.headers, small);
    const smallAgain = await rawPut(smallGrant.url, smallGrant.headers, small);
    check('(b) second identical PUT is 412', answered.length > 0 && answered.every((t) => t.status === 412) && smallAgain.status === 412,
      `raw, 4 MiB body, 5 tries: ${tries.map((t) => t.status || `reset (${t.text})`).join(', ')}\nfirst answer: ${answered[0]?.text ?? '(none)'}\nraw, 100 kB body: ${smallAgain.status} ${smallAgain.text.replace(/\n/g, ' ')}`);

    // (c) other bytes of the granted length
    const cGrant = httpGrant(await store.grantUpload('archives/c.tar', expected));
    const other = randomBytes(bytes.length);
    const c = await rawPut(cGrant.url, cGrant.headers, other);
    let cUpload = '';
    let cRefused = false;
    await uploadWithGrant(cGrant, Readable.from([other])).then((o) => { cUpload = `resolved ${o}`; }, (err: Error) => {
      cRefused = err instanceof ObjectVerificationError;
      cUpload = `${err.name}: ${err.message}`;
    });
    const cHead = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'archives/c.tar' })).then(() => 'present', (err: { $metadata?: { httpStatusCode?: number } }) => `HEAD ${err.$metadata?.httpStatusCode}`);
    const cFiles = server === 'seaweedfs' ? '(n/a)' : readdirSync(join(dataDir, server, 'buckets', bucket, 'archives')).join(', ');
    check('(c) wrong checksum is 400 BadDigest and stores nothing', c.status === 400 && /<Code>BadDigest</.test(c.text) && cRefused && cHead === 'HEAD 404',
      `raw: ${c.status} ${c.text}\nuploadWithGrant: ${cUpload}\nafterwards: ${cHead}; files in the bucket's archives/: ${cFiles}`);

    // (d) HEAD with checksum mode, and our verify
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'archives/a.tar', ChecksumMode: 'ENABLED' }));
    const verified = await store.verify('archives/a.tar', expected);
    const wantB64 = Buffer.from(expected.sha256, 'hex').toString('base64');
    check('(d) HEAD returns the stored ChecksumSHA256 and ContentLength', head.ChecksumSHA256 === wantB64 && head.ContentLength === bytes.length
      && verified.status === 'verified' && verified.method === 'stored-checksum',
    `HEAD: ContentLength ${head.ContentLength}, ChecksumSHA256 ${head.ChecksumSHA256} (want ${wantB64}), ChecksumType ${head.ChecksumType}, ETag ${head.ETag}\nverify: ${JSON.stringify(verified)}`);

    // (e) GET streams: first chunk long before the end on a 64 MiB object
    const big = randomBytes(64 * MIB);
    const bigExpected = { length: big.length, sha256: sha256(big) };
    const bigGrant = await store.grantUpload('archives/big.tar', bigExpected);
    await uploadWithGrant(bigGrant, Readable.from([big]));
    const t0 = performance.now();
    const body = await store.get('archives/big.tar');
    const hash = createHash('sha256');
    let firstMs = -1;
    let chunks = 0;
    let total = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (firstMs < 0) firstMs = performance.now() - t0;
      chunks += 1;
      total += chunk.length;
      hash.update(chunk);
    }
    const allMs = performance.now() - t0;
    check('(e) GetObject streams the body', total === big.length && hash.digest('hex') === bigExpected.sha256 && chunks > 1,
      `${total} bytes in ${chunks} chunks, first after ${firstMs.toFixed(1)} ms, all after ${allMs.toFixed(1)} ms, SHA-256 matches`);

    // extra: a grant used for another key is 403 (a small body: the server reads it all before answering)
    const bent = await rawPut(smallGrant.url.replace('small.tar', 'bent.tar'), smallGrant.headers, small);
    check('(extra) a grant used for another key is 403', bent.status === 403, `raw: ${bent.status} ${bent.text}`);

    // extra: an expired grant is 403 at the server too
    const expiring = httpGrant(await store.grantUpload('archives/expired.tar', smallExpected, { expiresInSeconds: 1 }));
    await new Promise((r) => setTimeout(r, 2100));
    const expired = await rawPut(expiring.url, expiring.headers, small);
    check('(extra) an expired grant is 403', expired.status === 403, `raw: ${expired.status} ${expired.text}`);

    // extra: a refused large PUT ends as `exists` through uploadWithGrant (a retry after a crash): a reset
    // instead of the 412 is settled by the grant's presigned HEAD
    const repeats: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      repeats.push(await uploadWithGrant(bigGrant, Readable.from([big])).catch((err: Error) => err.message));
    }
    check('(extra) 10 repeats of the 64 MiB PUT through uploadWithGrant are all `exists`', repeats.every((r) => r === 'exists'),
      Object.entries(repeats.reduce<Record<string, number>>((n, r) => ({ ...n, [r]: (n[r] ?? 0) + 1 }), {})).map(([r, n]) => `${n}× ${r}`).join(', '));

    // extra: an object overwritten without a checksum (same length) is not verified
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'archives/a2.tar', Body: randomBytes(bytes.length) }));
    const overHead = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'archives/a2.tar', ChecksumMode: 'ENABLED' }));
    const corrupt = await store.verify('archives/a2.tar', expected);
    check('(extra) an overwrite without checksum is a mismatch', corrupt.status === 'mismatch',
      `HEAD after overwrite: ChecksumSHA256 ${overHead.ChecksumSHA256}, ChecksumType ${overHead.ChecksumType}\nverify: ${JSON.stringify({ ...corrupt, sha256: undefined })}`);
  } finally {
    client.destroy();
    // (f) SIGTERM, timed (stop SIGKILLs after 10 s)
    const t0 = performance.now();
    const pid = started.pid;
    await started.stop(10_000);
    const ms = performance.now() - t0;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    check('(f) SIGTERM stops it promptly', !alive && ms < 2000, `gone after ${ms.toFixed(0)} ms (SIGKILL would have come at 10 000 ms)`);
    rmSync(dataDir, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok);
  console.log(`${server}: ${results.length - failed.length}/${results.length} pass`);
  if (failed.length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
