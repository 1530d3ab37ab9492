/**
 * `npm start`'s build skip: the server step rebuilds when any input (a source, a tsconfig, the
 * lockfile) is edited, added, removed or renamed, or when an output is missing; otherwise it
 * skips tsc. Checked on a small tree in a temporary directory (no tsc run).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BUILD_STEPS, fingerprint, missingOutputs, runBuildSteps, serverBuildNeeded, serverInputs, type BuildStep } from '../../../../ops/dev/build-steps';
import { WORKFLOW_BUNDLE, workflowBundleInputs, workflowBundleNeeded } from '../../../../ops/dev/workflow-bundle-step';

function write(root: string, file: string, text: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), 'build-steps-'));
  write(root, 'lib/a.ts', 'export const a = 1;\n');
  write(root, 'gateway/b.ts', 'export const b = 2;\n');
  write(root, 'gateway/types.d.ts', 'export type T = 1;\n');
  write(root, 'tsconfig.json', '{}');
  write(root, 'tsconfig.build.json', '{}');
  write(root, 'package-lock.json', '{}');
  write(root, 'test/ignored.ts', 'not an input');
  write(root, 'ops/dev/bootstrap.sh', 'not read by tsc');
  write(root, 'dist/lib/a.js', '');
  write(root, 'dist/gateway/b.js', '');
  return root;
}

/** Marks the tree as built: writes the stamp the server step keeps. */
function stamp(root: string): void {
  write(root, 'dist/.build-stamps/server.sha256', `${fingerprint(root, serverInputs(root))}\n`);
}

describe('npm start build steps', () => {
  it('lists the compiled directories and the config files as inputs, and expects one output per source', () => {
    const root = tree();
    assert.deepEqual(serverInputs(root), ['gateway/b.ts', 'gateway/types.d.ts', 'lib/a.ts', 'package-lock.json', 'tsconfig.build.json', 'tsconfig.json']);
    assert.deepEqual(missingOutputs(root, serverInputs(root)), []);
    rmSync(join(root, 'dist/lib/a.js'));
    assert.deepEqual(missingOutputs(root, serverInputs(root)), ['dist/lib/a.js']);
  });

  it('skips only when the stamp matches and every output exists', () => {
    const root = tree();
    assert.equal(serverBuildNeeded(root).needed, true, 'never built');
    stamp(root);
    assert.equal(serverBuildNeeded(root).needed, false);
    const changes: Array<[string, () => void]> = [
      ['an edited source', () => write(root, 'lib/a.ts', 'export const a = 3;\n')],
      ['a new source', () => write(root, 'agent/c.ts', 'export {};\n')],
      ['a renamed source', () => renameSync(join(root, 'gateway/b.ts'), join(root, 'gateway/b2.ts'))],
      ['an edited tsconfig', () => write(root, 'tsconfig.build.json', '{"compilerOptions":{}}')],
      ['an edited lockfile', () => write(root, 'package-lock.json', '{"v":2}')],
      ['a missing output', () => rmSync(join(root, 'dist/lib/a.js'))],
    ];
    for (const [what, change] of changes) {
      write(root, 'dist/lib/a.js', '');
      write(root, 'dist/gateway/b2.js', '');
      write(root, 'dist/agent/c.js', '');
      stamp(root);
      assert.equal(serverBuildNeeded(root).needed, false, `before ${what}`);
      change();
      assert.equal(serverBuildNeeded(root).needed, true, what);
    }
    write(root, 'test/ignored.ts', 'changed');
    write(root, 'dist/lib/a.js', '');
    stamp(root);
    write(root, 'test/ignored.ts', 'changed again');
    assert.equal(serverBuildNeeded(root).needed, false, 'tests are not server inputs');
  });

  it('rebundles the workflows when a compiled workflow or the lockfile changed, or the bundle is gone', () => {
    const root = tree();
    write(root, 'dist/workflows/index.js', 'exports.a = 1;');
    write(root, 'dist/workflows/definitions/x.js', 'exports.x = 1;');
    assert.deepEqual(workflowBundleInputs(root), ['dist/workflows/definitions/x.js', 'dist/workflows/index.js', 'package-lock.json']);
    assert.equal(workflowBundleNeeded(root).needed, true, 'never bundled');
    const bundled = (): void => {
      write(root, WORKFLOW_BUNDLE, '/* bundle */');
      write(root, 'dist/.build-stamps/workflow-bundle.sha256', `${fingerprint(root, workflowBundleInputs(root))}\n`);
    };
    bundled();
    assert.equal(workflowBundleNeeded(root).needed, false);
    write(root, 'dist/workflows/definitions/x.js', 'exports.x = 2;');
    assert.equal(workflowBundleNeeded(root).needed, true, 'a changed workflow');
    bundled();
    write(root, 'package-lock.json', '{"sdk":"next"}');
    assert.equal(workflowBundleNeeded(root).needed, true, 'another SDK version');
    bundled();
    rmSync(join(root, WORKFLOW_BUNDLE));
    assert.equal(workflowBundleNeeded(root).needed, true, 'no bundle');
    assert.deepEqual(BUILD_STEPS.map((s) => s.name), ['server (tsc)', 'workflow bundle', 'console (esbuild)'], 'bundled after the server is compiled; the console last');
  });

  it('runs the steps in order and reports each outcome', async () => {
    const order: string[] = [];
    const step = (name: string, outcome: 'built' | 'unchanged'): BuildStep => ({ name, run: () => { order.push(name); return outcome; } });
    const results = await runBuildSteps('/nowhere', [step('server', 'unchanged'), step('console', 'built')]);
    assert.deepEqual(order, ['server', 'console']);
    assert.deepEqual(results.map((r) => [r.name, r.outcome]), [['server', 'unchanged'], ['console', 'built']]);
  });
});
