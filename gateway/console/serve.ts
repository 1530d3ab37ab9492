/**
 * Serves the built browser console (docs/console.md) under `/console/`: hashed assets from
 * `/console/assets/` cached for a year (their names change with their content), every other
 * console path answered with `index.html` (the console routes in the browser), never cached.
 * Files are read once at startup into memory with their pre-compressed gzip/brotli forms (the
 * build writes them), so a request does no file I/O and no compression. `GET /` redirects to the
 * console. The console is public static code; everything it shows comes from API calls that check
 * the caller. A strict Content-Security-Policy allows scripts, styles and connections to this
 * origin only (images also from https: branding logos).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../../lib/errors';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2',
};

/** The console's Content-Security-Policy. */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

interface Asset {
  type: string;
  identity: Buffer;
  gzip: Buffer | undefined;
  brotli: Buffer | undefined;
  immutable: boolean;
}

/** The console's files by URL path (`/console/assets/app-X.js`), read once. */
export function loadConsoleAssets(dir: string): Map<string, Asset> | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const assets = new Map<string, Asset>();
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (!entry.name.startsWith('.') && !entry.name.endsWith('.gz') && !entry.name.endsWith('.br')) {
        const url = `/console/${relative(dir, path).split('\\').join('/')}`;
        assets.set(url, {
          type: TYPES[extname(entry.name)] ?? 'application/octet-stream',
          identity: readFileSync(path),
          gzip: existsSync(`${path}.gz`) ? readFileSync(`${path}.gz`) : undefined,
          brotli: existsSync(`${path}.br`) ? readFileSync(`${path}.br`) : undefined,
          immutable: url.startsWith('/console/assets/'),
        });
      }
    }
  };
  walk(dir);
  return assets;
}

function accepts(header: string, coding: string): boolean {
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    return name === coding && !params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p));
  });
}

function send(ctx: Context, asset: Asset): void {
  const encodings = ctx.get('accept-encoding');
  ctx.set('Vary', 'Accept-Encoding');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  if (asset.type.startsWith('text/html')) {
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('X-Frame-Options', 'DENY');
  }
  ctx.type = asset.type;
  if (asset.brotli && accepts(encodings, 'br')) {
    ctx.set('Content-Encoding', 'br');
    ctx.body = asset.brotli;
  } else if (asset.gzip && accepts(encodings, 'gzip')) {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = asset.gzip;
  } else ctx.body = asset.identity;
}

/** The console's routes: `/` and `/stats` (redirects), `/console`, `/console/` and everything under it (GET/HEAD). */
export function consoleRouter(options: { dir: string; cwd: string }): Router {
  const dir = resolve(options.cwd, options.dir);
  const assets = loadConsoleAssets(dir);
  const router = createRouter();
  const open = publicAccess();
  router.get('/', open, (ctx) => {
    ctx.status = 302;
    ctx.redirect('/console/');
  });
  // The public stats page (docs/public-stats.md) is a console page that needs no sign-in.
  router.get('/stats', open, (ctx) => {
    ctx.status = 302;
    ctx.redirect('/console/stats');
  });
  documentRoute(router, 'GET', '/stats', { success: 302, summary: 'Redirects to the console\'s public stats page (`/console/stats`, no sign-in).' });
  const serve = (ctx: Context): void => {
    if (!assets) throw new AppError('service_unavailable', `The console is not built (no ${join(dir, 'index.html')}): run npm run build`);
    const path = ctx.path === '/console' ? '/console/' : ctx.path;
    const asset = assets.get(path);
    if (asset) return send(ctx, asset);
    // A missing hashed asset is a 404 (a stale page asking for an old build), not the app.
    if (path.startsWith('/console/assets/')) throw new AppError('not_found', `No console asset ${path}`);
    send(ctx, assets.get('/console/index.html')!);
  };
  for (const path of ['/console', '/console/', '/console/{*rest}']) router.get(path, open, serve);
  return router;
}
