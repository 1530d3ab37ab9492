/**
 * Builds the browser console (console/src, Preact) into `dist/console` with esbuild
 * (docs/console.md): one entry, code split per console area, content-hashed file names,
 * `index.html` naming the entry's files, every asset pre-compressed (gzip and brotli) so the
 * gateway serves them without compressing per request, and `site-ui-manifest.json` saying whether
 * the build is standard or custom (Site UI modules from `SITE_UI_DIR`).
 *
 * The first-load budget: the compressed (gzip) size of what a first visit downloads — the entry
 * chunk, the chunks it imports statically, and the stylesheet — must stay under
 * `CONSOLE_FIRST_LOAD_BUDGET_KIB`; a build over it fails, naming the files.
 *
 * `--if-changed`: skips the build when the sources, the Site UI modules and this script are
 * unchanged since the last build (a hash kept in `dist/console/.build-hash`).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';

const ROOT = join(__dirname, '..', '..');
const SOURCE = join(ROOT, 'console');
const DEFAULT_OUT = join(ROOT, 'dist', 'console');

/** The compressed first-load budget (JS + CSS, gzip), in KiB. */
export const CONSOLE_FIRST_LOAD_BUDGET_KIB = 80;
/** The only Site UI module API revision this build accepts. */
export const SITE_UI_API = 'Site UI API v1';

/** A Site UI module directory's declaration (`site-ui.json`). */
interface SiteUiModule {
  api: string;
  name: string;
  /** A stylesheet appended after the console's own (theme overrides). */
  stylesheet?: string;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

function sourceHash(siteUiDir: string | undefined): string {
  const hash = createHash('sha256');
  const files = [...filesUnder(SOURCE), __filename, join(ROOT, 'package-lock.json'), ...(siteUiDir ? filesUnder(siteUiDir) : [])].sort();
  for (const file of files) hash.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

/** Reads and checks a Site UI module; an unsupported API revision stops the build. */
export function readSiteUiModule(dir: string): SiteUiModule {
  const file = join(dir, 'site-ui.json');
  if (!existsSync(file)) throw new Error(`SITE_UI_DIR ${dir}: no site-ui.json`);
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<SiteUiModule>;
  if (parsed.api !== SITE_UI_API) throw new Error(`${file}: api ${JSON.stringify(parsed.api)} is not supported; this console builds "${SITE_UI_API}" modules only`);
  if (typeof parsed.name !== 'string' || !/^[a-z0-9][a-z0-9-]{0,63}$/.test(parsed.name)) throw new Error(`${file}: name must be 1-64 lower-case letters, digits or dashes`);
  if (parsed.stylesheet !== undefined && (typeof parsed.stylesheet !== 'string' || parsed.stylesheet.includes('..') || !parsed.stylesheet.endsWith('.css'))) {
    throw new Error(`${file}: stylesheet must be a .css file inside the module directory`);
  }
  return { api: parsed.api, name: parsed.name, ...(parsed.stylesheet ? { stylesheet: parsed.stylesheet } : {}) };
}

/** The output files a first visit loads: the entry, its static imports (transitively), its CSS. */
export function firstLoadFiles(metafile: Metafile, entryOut: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const output = metafile.outputs[file];
    if (!output) return;
    for (const imp of output.imports) if (imp.kind === 'import-statement') visit(imp.path);
    if (output.cssBundle) seen.add(output.cssBundle);
  };
  visit(entryOut);
  return [...seen];
}

export interface ConsoleBuildResult {
  skipped: boolean;
  firstLoadGzipBytes: number;
  files: number;
}

/** Builds the console; throws (naming the cause) on a failed build or a blown budget. */
export async function buildConsole(options: { ifChanged?: boolean; siteUiDir?: string | undefined; outDir?: string } = {}): Promise<ConsoleBuildResult> {
  const OUT = options.outDir ?? DEFAULT_OUT;
  const HASH_FILE = join(OUT, '.build-hash');
  const siteUi = options.siteUiDir ? readSiteUiModule(options.siteUiDir) : undefined;
  const hash = sourceHash(options.siteUiDir);
  if (options.ifChanged && existsSync(HASH_FILE) && readFileSync(HASH_FILE, 'utf8') === hash && existsSync(join(OUT, 'index.html'))) {
    return { skipped: true, firstLoadGzipBytes: 0, files: 0 };
  }
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(join(OUT, 'assets'), { recursive: true });
  const result = await build({
    entryPoints: { app: join(SOURCE, 'src', 'main.tsx') },
    bundle: true, splitting: true, format: 'esm', target: ['chrome110', 'firefox110', 'safari16'],
    minify: true, sourcemap: false, metafile: true, legalComments: 'none', logLevel: 'silent',
    outdir: join(OUT, 'assets'), entryNames: '[name]-[hash]', chunkNames: 'chunk-[hash]', assetNames: '[name]-[hash]',
    jsx: 'automatic', jsxImportSource: 'preact', tsconfig: join(SOURCE, 'tsconfig.json'),
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const metafile = result.metafile;
  const rel = (abs: string): string => relative(ROOT, abs).split('\\').join('/');
  const entryOut = Object.keys(metafile.outputs).find((f) => metafile.outputs[f]!.entryPoint === rel(join(SOURCE, 'src', 'main.tsx')));
  if (!entryOut) throw new Error('console build: no entry output');
  const entryCss = metafile.outputs[entryOut]!.cssBundle;
  let themeHref: string | undefined;
  if (siteUi?.stylesheet && options.siteUiDir) {
    const css = readFileSync(join(options.siteUiDir, siteUi.stylesheet));
    themeHref = `theme-${createHash('sha256').update(css).digest('hex').slice(0, 8)}.css`;
    writeFileSync(join(OUT, 'assets', themeHref), css);
  }
  const url = (file: string): string => `/console/assets/${basename(file)}`;
  const html = readFileSync(join(SOURCE, 'index.html'), 'utf8')
    .replace('%JS%', url(entryOut))
    .replace('<link rel="stylesheet" href="%CSS%">', [entryCss ? `<link rel="stylesheet" href="${url(entryCss)}">` : '', themeHref ? `<link rel="stylesheet" href="/console/assets/${themeHref}">` : ''].join(''));
  writeFileSync(join(OUT, 'index.html'), html);
  writeFileSync(join(OUT, 'site-ui-manifest.json'), `${JSON.stringify({ site_ui_api: SITE_UI_API, build: siteUi ? 'custom' : 'standard', modules: siteUi ? [siteUi.name] : [] }, null, 2)}\n`);

  // Pre-compress every asset; measure the first load.
  let files = 0;
  for (const file of filesUnder(OUT)) {
    if (file.endsWith('.gz') || file.endsWith('.br') || basename(file).startsWith('.')) continue;
    const body = readFileSync(file);
    writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
    writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
    files++;
  }
  const firstLoad = [...firstLoadFiles(metafile, entryOut).map((f) => join(ROOT, f)), ...(themeHref ? [join(OUT, 'assets', themeHref)] : [])];
  const firstLoadGzipBytes = firstLoad.reduce((sum, f) => sum + statSync(`${f}.gz`).size, 0);
  if (firstLoadGzipBytes > CONSOLE_FIRST_LOAD_BUDGET_KIB * 1024) {
    throw new Error(`console first load is ${(firstLoadGzipBytes / 1024).toFixed(1)} KiB gzip, over the ${CONSOLE_FIRST_LOAD_BUDGET_KIB} KiB budget (${firstLoad.map((f) => basename(f)).join(', ')}): split a page out or drop a dependency`);
  }
  writeFileSync(HASH_FILE, hash);
  return { skipped: false, firstLoadGzipBytes, files };
}

async function main(): Promise<void> {
  const started = Date.now();
  const result = await buildConsole({ ifChanged: process.argv.includes('--if-changed'), siteUiDir: process.env.SITE_UI_DIR || undefined });
  if (result.skipped) console.log('[console] unchanged: build skipped');
  else console.log(`[console] built ${result.files} files in ${Date.now() - started} ms; first load ${(result.firstLoadGzipBytes / 1024).toFixed(1)} KiB gzip (budget ${CONSOLE_FIRST_LOAD_BUDGET_KIB} KiB)`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`[console] build failed: ${(err as Error).message}`);
    process.exit(1);
  });
}
