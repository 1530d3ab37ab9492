/**
 * What `npm start` builds before it runs the processes, and how it skips what has not changed
 * (docs/dev-stack.md "Rebuilding only what changed"). {@link BUILD_STEPS} is the list: each step
 * builds its own outputs and says whether it did. The server step fingerprints its inputs (every
 * file tsc reads under the directories `tsconfig.build.json` compiles, both tsconfig files and the
 * lockfile) and skips `tsc` entirely when the fingerprint matches the one stored beside its
 * outputs and every output exists; otherwise it runs `tsc --incremental` (its build info under
 * `dist/`, so deleting `dist/` resets everything). `npm run build` stays a plain full `tsc`: it never depends on a stamp.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fingerprint } from './fingerprint';
import { buildConsole } from '../build/console';
import { workflowBundleBuild } from './workflow-bundle-step';

export { fingerprint };

/** What a step did. */
export type BuildOutcome = 'built' | 'unchanged';

/** One build step of `npm start`: builds its outputs when its inputs changed. */
export interface BuildStep {
  name: string;
  run(root: string): Promise<BuildOutcome> | BuildOutcome;
}

/** The directories `tsconfig.build.json` compiles (its `include`). */
export const SERVER_SOURCE_DIRS = ['lib', 'gateway', 'agent', 'api', 'workflows', 'activities', 'workers', 'migrations', 'ops'] as const;
/** Files outside those directories whose change must rebuild the server. */
const SERVER_CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

const STAMP = join('dist', '.build-stamps', 'server.sha256');
const BUILD_INFO = join('dist', '.tsbuildinfo');

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Files tsc reads (sources, declarations, imported JSON); shell scripts and the like are not inputs. */
const COMPILER_INPUT = /\.([cm]?[jt]sx?|json)$/;

/** The server's inputs, relative to `root`, sorted. */
export function serverInputs(root: string): string[] {
  const files = SERVER_SOURCE_DIRS.flatMap((dir) => listFiles(join(root, dir)).filter((f) => COMPILER_INPUT.test(f)).map((f) => relative(root, f)));
  return [...files, ...SERVER_CONFIG_FILES.filter((f) => existsSync(join(root, f)))].sort();
}


/** The `dist/` file each compiled source produces (declarations produce nothing). */
function outputOf(file: string): string | undefined {
  if (!file.endsWith('.ts') || file.endsWith('.d.ts')) return undefined;
  return join('dist', file.replace(/\.ts$/, '.js'));
}

/** The compiled sources whose output is missing (a partly deleted `dist/` must rebuild). */
export function missingOutputs(root: string, files: readonly string[]): string[] {
  return files.flatMap((file) => {
    const output = outputOf(file);
    return output && !existsSync(join(root, output)) ? [output] : [];
  });
}

/** The server step's decision: `unchanged` when the stamp matches and every output exists. */
export function serverBuildNeeded(root: string): { needed: false } | { needed: true; stamp: string; missing: number } {
  const inputs = serverInputs(root);
  const stamp = fingerprint(root, inputs);
  const stampPath = join(root, STAMP);
  const missing = missingOutputs(root, inputs).length;
  if (missing === 0 && existsSync(stampPath) && readFileSync(stampPath, 'utf8').trim() === stamp) return { needed: false };
  return { needed: true, stamp, missing };
}

/** The server (gateway, api, workers): `tsc -p tsconfig.build.json`, skipped when nothing changed. */
export const serverBuild: BuildStep = {
  name: 'server (tsc)',
  run(root) {
    const decision = serverBuildNeeded(root);
    if (!decision.needed) return 'unchanged';
    // Incremental tsc re-emits only what it thinks changed: with outputs missing, start it afresh.
    if (decision.missing > 0) rmSync(join(root, BUILD_INFO), { force: true });
    rmSync(join(root, STAMP), { force: true });
    const result = spawnSync(join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', BUILD_INFO], {
      cwd: root, stdio: 'inherit',
    });
    if (result.status !== 0) throw new Error('build failed (tsc -p tsconfig.build.json)');
    mkdirSync(dirname(join(root, STAMP)), { recursive: true });
    writeFileSync(join(root, STAMP), `${decision.stamp}\n`);
    return 'built';
  },
};

/** The browser console (docs/console.md): esbuild into `dist/console`, skipped when its sources are unchanged. */
export const consoleBuild: BuildStep = {
  name: 'console (esbuild)',
  async run() {
    const result = await buildConsole({ ifChanged: true, siteUiDir: process.env.SITE_UI_DIR || undefined });
    return result.skipped ? 'unchanged' : 'built';
  },
};

/**
 * The steps `npm start` runs in order: the server, the control worker's workflow bundle (from the
 * server's `dist/workflows`), and the console's assets.
 */
export const BUILD_STEPS: readonly BuildStep[] = [serverBuild, workflowBundleBuild, consoleBuild];

/** Runs `steps` in order; returns each step's outcome and duration. */
export async function runBuildSteps(root: string, steps: readonly BuildStep[] = BUILD_STEPS): Promise<Array<{ name: string; outcome: BuildOutcome; ms: number }>> {
  const results: Array<{ name: string; outcome: BuildOutcome; ms: number }> = [];
  for (const step of steps) {
    const started = Date.now();
    const outcome = await step.run(root);
    results.push({ name: step.name, outcome, ms: Date.now() - started });
  }
  return results;
}
