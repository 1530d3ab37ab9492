/**
 * The gateway serves the built console under /console/ (gateway/console/serve.ts): the real build
 * (esbuild) into a temporary directory, then a real gateway reading it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { buildConsole, CONSOLE_FIRST_LOAD_BUDGET_KIB, readSiteUiModule, SITE_UI_API } from '../../../ops/build/console';
import { startTestGateway, type TestGateway } from '../../support/gateway';

describe('console serving', function () {
  this.timeout(60_000);
  let dir: string;
  let gw: TestGateway;
  let unbuilt: TestGateway;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-'));
    const result = await buildConsole({ outDir: join(dir, 'console') });
    assert.equal(result.skipped, false);
    assert.ok(result.firstLoadGzipBytes > 0 && result.firstLoadGzipBytes <= CONSOLE_FIRST_LOAD_BUDGET_KIB * 1024);
    gw = await startTestGateway({ env: { CONSOLE_DIR: join(dir, 'console') } });
    unbuilt = await startTestGateway({ env: { CONSOLE_DIR: join(dir, 'nowhere') } });
  });
  after(async () => {
    await gw?.close();
    await unbuilt?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers index.html for every console path, uncached, with a strict Content-Security-Policy', async () => {
    for (const path of ['/console', '/console/', '/console/admin/routing', '/console/chats/12']) {
      const res = await fetch(`${gw.url}${path}`, { headers: { 'accept-encoding': 'identity' } });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self';.*frame-ancestors 'none'/);
      assert.match(await res.text(), /<script type="module" src="\/console\/assets\/app-[A-Z0-9]+\.js"><\/script>/);
    }
    const root = await fetch(`${gw.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/console/');
  });

  it('serves hashed assets for a year, pre-compressed as the client accepts, and 404s a missing asset', async () => {
    const html = await (await fetch(`${gw.url}/console/`)).text();
    const js = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const identity = await fetch(`${gw.url}${js}`, { headers: { 'accept-encoding': 'identity' } });
    assert.equal(identity.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(identity.headers.get('content-encoding'), null);
    const plain = Buffer.from(await identity.arrayBuffer());
    // Node's fetch decodes; read the raw bytes with a manual request to see the encoding.
    const { request } = await import('node:http');
    const raw = (encoding: string): Promise<{ encoding: string | undefined; body: Buffer }> => new Promise((resolve, reject) => {
      const req = request(`${gw.url}${js}`, { headers: { 'accept-encoding': encoding } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
    const br = await raw('gzip, deflate, br');
    assert.equal(br.encoding, 'br');
    assert.deepEqual(brotliDecompressSync(br.body), plain);
    const gz = await raw('gzip');
    assert.equal(gz.encoding, 'gzip');
    assert.deepEqual(gunzipSync(gz.body), plain);
    assert.equal((await raw('br;q=0, gzip')).encoding, 'gzip', 'q=0 refuses a coding');
    assert.equal((await fetch(`${gw.url}/console/assets/app-OLDBUILD.js`)).status, 404);
  });

  it('writes the Site UI manifest (standard build) and no source maps or dotfiles are served', async () => {
    const manifest = await (await fetch(`${gw.url}/console/site-ui-manifest.json`)).json();
    assert.deepEqual(manifest, { site_ui_api: SITE_UI_API, build: 'standard', modules: [] });
    const files = readdirSync(join(dir, 'console', 'assets'));
    assert.ok(!files.some((f) => f.endsWith('.map')));
    const hash = await fetch(`${gw.url}/console/.build-hash`);
    assert.match(await hash.text(), /<div id="app">/, 'a dotfile is not an asset: the app answers');
  });

  it('answers 503 naming the build command when the console is not built; the API routes are unaffected', async () => {
    const res = await fetch(`${unbuilt.url}/console/`);
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /npm run build/);
    assert.equal((await fetch(`${unbuilt.url}/health`)).status, 200);
  });

  it('declares the console routes public in the route table', () => {
    const entries = gw.routes.filter((r) => r.path.startsWith('/console') || r.path === '/');
    assert.ok(entries.length >= 3);
    assert.ok(entries.every((r) => r.access === 'public'));
  });

  it('a custom build needs a supported Site UI API revision; an unsupported one stops the build', async () => {
    const mod = join(dir, 'site-ui');
    mkdirSync(mod);
    writeFileSync(join(mod, 'site-ui.json'), JSON.stringify({ api: 'Site UI API v2', name: 'acme' }));
    await assert.rejects(buildConsole({ outDir: join(dir, 'custom'), siteUiDir: mod }), /Site UI API v2.*not supported/);
    writeFileSync(join(mod, 'site-ui.json'), JSON.stringify({ api: SITE_UI_API, name: 'acme', stylesheet: 'theme.css' }));
    writeFileSync(join(mod, 'theme.css'), ':root { --accent: #c00; }');
    assert.equal(readSiteUiModule(mod).name, 'acme');
    await buildConsole({ outDir: join(dir, 'custom'), siteUiDir: mod });
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'custom', 'site-ui-manifest.json'), 'utf8')), { site_ui_api: SITE_UI_API, build: 'custom', modules: ['acme'] });
    assert.match(readFileSync(join(dir, 'custom', 'index.html'), 'utf8'), /href="\/console\/assets\/theme-[0-9a-f]{8}\.css"/);
    writeFileSync(join(mod, 'site-ui.json'), JSON.stringify({ api: SITE_UI_API, name: 'acme', stylesheet: '../../etc/passwd.css' }));
    assert.throws(() => readSiteUiModule(mod), /inside the module directory/);
  });

  it('--if-changed skips an unchanged build; without it the build runs again', async () => {
    const out = join(dir, 'console');
    assert.equal((await buildConsole({ outDir: out, ifChanged: true })).skipped, true);
    assert.equal((await buildConsole({ outDir: out, ifChanged: false })).skipped, false);
  });
});
