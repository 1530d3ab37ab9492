/**
 * Temporal for tests: one environment per test run. By default a local dev server started
 * from the installed CLI (`.tools/temporal/bin/temporal`, `existing-path`); with
 * `TEMPORAL_ADDRESS` set, that existing server. Workflow code is bundled once per run.
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { searchAttributes } from '../../workflows/definitions/search-attributes';

export const TEMPORAL_CLI = join(__dirname, '../../.tools/temporal/bin/temporal');

let envPromise: Promise<TestWorkflowEnvironment> | undefined;
let bundlePromise: Promise<WorkflowBundleWithSourceMap> | undefined;
let runtimeInstalled = false;

/**
 * Installs the SDK runtime of the test run (core logs at ERROR only), once: a replay worker
 * would otherwise instantiate the default runtime and a later `install` would throw.
 */
export function installTestRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  runtimeInstalled = true;
}

/** The run's Temporal environment (created on first use, torn down by the root hook). */
export function temporalEnv(): Promise<TestWorkflowEnvironment> {
  installTestRuntime();
  envPromise ??= process.env.TEMPORAL_ADDRESS
    ? TestWorkflowEnvironment.createFromExistingServer({ address: process.env.TEMPORAL_ADDRESS })
    : TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'existing-path', path: TEMPORAL_CLI },
          ip: '127.0.0.1',
          searchAttributes: Object.values(searchAttributes),
        },
      });
  return envPromise;
}

/** The workflows of `workflows/index.ts`, bundled once. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundlePromise ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietLogger });
  return bundlePromise;
}

/** A task queue no other test uses. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export async function teardownTemporal(): Promise<void> {
  if (envPromise) await (await envPromise).teardown();
  envPromise = undefined;
}

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };
