/**
 * The control worker's workflow bundle as a build step of `npm start` (docs/dev-stack.md
 * "Rebuilding only what changed"): without it the control worker bundles `dist/workflows` with
 * webpack at every start (2.5 s on an idle machine, 6 s under load). The step writes
 * `dist/workflow-bundle.js` from the compiled workflows and rebundles whenever any file under
 * `dist/workflows/` or the lockfile changed (a fingerprint kept beside it), so the worker never
 * loads workflow code older than `dist/`. `npm start` points the worker at it with
 * `TEMPORAL_WORKFLOW_BUNDLE_PATH`; without that variable the worker bundles at start, as before.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { BuildStep } from './build-steps';
import { fingerprint } from './fingerprint';

/** The bundle, relative to the root. */
export const WORKFLOW_BUNDLE = join('dist', 'workflow-bundle.js');
const STAMP = join('dist', '.build-stamps', 'workflow-bundle.sha256');

function listJs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listJs(path);
    return entry.isFile() && entry.name.endsWith('.js') ? [path] : [];
  });
}

/** The bundle's inputs, relative to `root`: the compiled workflows and the lockfile (the SDK's version). */
export function workflowBundleInputs(root: string): string[] {
  return [...listJs(join(root, 'dist', 'workflows')).map((f) => relative(root, f)), 'package-lock.json'].filter((f) => existsSync(join(root, f))).sort();
}

/** Whether the bundle must be (re)built: no bundle, or a fingerprint that differs from the stamp. */
export function workflowBundleNeeded(root: string): { needed: false } | { needed: true; stamp: string } {
  const stamp = fingerprint(root, workflowBundleInputs(root));
  const stampPath = join(root, STAMP);
  if (existsSync(join(root, WORKFLOW_BUNDLE)) && existsSync(stampPath) && readFileSync(stampPath, 'utf8').trim() === stamp) return { needed: false };
  return { needed: true, stamp };
}

/** Bundles `dist/workflows` (after the server step) into {@link WORKFLOW_BUNDLE}, skipped when unchanged. */
export const workflowBundleBuild: BuildStep = {
  name: 'workflow bundle',
  async run(root) {
    const decision = workflowBundleNeeded(root);
    if (!decision.needed) return 'unchanged';
    rmSync(join(root, STAMP), { force: true });
    // Loaded only when a bundle is due: the SDK's bundler (webpack) is heavy to import.
    const { bundleWorkflowCode } = await import('@temporalio/worker');
    const noop = () => undefined;
    const { code } = await bundleWorkflowCode({
      workflowsPath: join(root, 'dist', 'workflows', 'index.js'),
      logger: { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop },
    });
    writeFileSync(join(root, WORKFLOW_BUNDLE), code);
    mkdirSync(dirname(join(root, STAMP)), { recursive: true });
    writeFileSync(join(root, STAMP), `${decision.stamp}\n`);
    return 'built';
  },
};
