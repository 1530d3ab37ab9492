/**
 * Whether `npm start` serves the demo model, and starting it (docs/demo-model.md). The demo runs
 * only on a first run with nothing configured: no models file named (`MODELS_CONFIG_PATH`,
 * `MODELS_CONFIG`), no active distribution manifest naming `paths.models`, and none of the
 * bundled example registry's variables (`${NAME}` in config/models.yaml, today
 * `AGGREGATOR_API_KEY`) set. Then the demo upstream runs inside the `npm start` process (it lives
 * and stops with it, needs no build and no supervision) and every process gets
 * `MODELS_CONFIG_PATH=config/demo-models.yaml` with `DEMO_MODEL_URL` pointing at it.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readManifest } from '../../gateway/registry/manifest';
import type { Settings } from '../../lib/settings';
import { startDemoUpstream } from './demo-upstream';
import { ROOT } from './sh';

/** The bundled registry the demo replaces, and the demo registry. */
export const BUNDLED_MODELS_FILE = join(ROOT, 'config/models.yaml');
export const DEMO_MODELS_FILE = join(ROOT, 'config/demo-models.yaml');

type Env = Readonly<Record<string, string | undefined>>;

/** What the decision reads: the environment, and what start found on disk. */
export interface DemoDecisionInput {
  env: Env;
  /** Variables the bundled example registry expands (its credentials and addresses). */
  bundledVariables: readonly string[];
  /** The active distribution manifest: whether it names a models file; `unreadable` counts as configured. */
  manifestModels: 'none' | 'configured' | 'unreadable';
}

/** Start the demo, or the reason it stays off. */
export type DemoDecision = { start: true } | { start: false; reason: string };

const isSet = (value: string | undefined) => value !== undefined && value.trim() !== '';

/** The rule, as a pure function: the demo starts only when no real registry or credential is configured. */
export function demoModelDecision(input: DemoDecisionInput): DemoDecision {
  for (const name of ['MODELS_CONFIG_PATH', 'MODELS_CONFIG']) {
    if (isSet(input.env[name])) return { start: false, reason: `${name} names a models file` };
  }
  if (input.manifestModels === 'configured') return { start: false, reason: 'the active distribution manifest names paths.models' };
  if (input.manifestModels === 'unreadable') return { start: false, reason: 'an active distribution manifest is configured (it did not load)' };
  const credential = input.bundledVariables.find((name) => isSet(input.env[name]));
  if (credential) return { start: false, reason: `${credential} is set for the bundled registry` };
  return { start: true };
}

/** The `${NAME}` variables a models file expands. */
export function registryVariables(yamlText: string): string[] {
  return [...new Set([...yamlText.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!))];
}

/** Whether an active distribution manifest names a models file (read the way the gateway reads it). */
function manifestModels(settings: Settings, cwd: string): DemoDecisionInput['manifestModels'] {
  if (settings.DISTRIBUTION_CONFIG_MODE !== 'active' || !settings.DISTRIBUTION_CONFIG_PATH) return 'none';
  try {
    return readManifest(resolve(cwd, settings.DISTRIBUTION_CONFIG_PATH)).paths?.models ? 'configured' : 'none';
  } catch {
    return 'unreadable';
  }
}

/** The decision `npm start` takes from its environment and settings. */
export function startDecision(env: Env, settings: Settings, cwd = process.cwd()): DemoDecision {
  return demoModelDecision({
    env,
    bundledVariables: registryVariables(readFileSync(BUNDLED_MODELS_FILE, 'utf8')),
    manifestModels: manifestModels(settings, cwd),
  });
}

/** A started demo: the environment for the stack's processes, and the terminal line announcing it. */
export interface StartedDemo {
  env: Record<string, string>;
  banner: string;
  close(): Promise<void>;
}

/**
 * Starts the demo upstream when {@link startDecision} says so (on `DEMO_MODEL_PORT`, 0: a free
 * loopback port); `undefined` when a real registry or credential is configured.
 */
export async function startDemoModelIfWanted(env: Env, settings: Settings): Promise<StartedDemo | undefined> {
  if (!startDecision(env, settings).start) return undefined;
  const upstream = await startDemoUpstream(settings.DEMO_MODEL_PORT);
  return {
    env: { MODELS_CONFIG_PATH: DEMO_MODELS_FILE, DEMO_MODEL_URL: upstream.url },
    banner: `DEMO MODEL serving as model \`demo\` (and \`demo-embedding\`) at ${upstream.url}: scripted answers, NOT an LLM. No registry or credential is configured; to use a real model see docs/demo-model.md`,
    close: () => upstream.close(),
  };
}
