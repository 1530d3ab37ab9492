/**
 * Turns measurements into the printed table and the dated section appended to bench/RESULTS.md.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { Percentiles, Throughput } from './load';
import { idlePolicy } from './idle';

/** Targets the gateway must meet (printed next to the figures). */
export const TARGETS = { rpsC64: 10_000, addedP50Ms: 0.3, addedP99Ms: 1.5 } as const;

export interface Measured {
  latency: Percentiles;
  ttfb: Percentiles;
  rps: Throughput;
  streams: Throughput;
}

export interface Row {
  name: string;
  /** Measurements, or the reason the system could not be measured. */
  result: Measured | { unavailable: string };
}

export interface RunInfo {
  date: Date;
  nproc: string;
  cpu: string;
  node: string;
  commit: string;
  /** The guest's CPU idle policy (see idle.ts): it moves c=1 latency more than any code path. */
  idle: string;
  settings: string;
}

const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
const rate = (t: Throughput): string => `${Math.round(t.perSecond).toLocaleString('en-US')}${t.failed > 0 ? ` (${t.failed} failed)` : ''}`;
const pct = (v: number): string => (Number.isFinite(v) ? Math.round(v).toString() : '?');
const busy = (t: Throughput): string => `${t.cpu.busy.map(pct).join('/')} (other ${pct(t.cpu.others)})`;
const verdict = (pass: boolean): string => (pass ? 'PASS' : 'MISS');

function isMeasured(result: Row['result']): result is Measured {
  return !('unavailable' in result);
}

const HEADER = [
  'System', 'p50 ms (c=1)', 'p99 ms (c=1)', 'added p50 ms', 'added p99 ms', 'req/s (c=64)',
  'stream TTFB p50 ms', 'added TTFB p50 ms', 'streams/s (c=64)', 'CPU % core0/core1 (other procs) req; streams', `targets (req/s ≥ ${TARGETS.rpsC64.toLocaleString('en-US')}, added p50 ≤ ${TARGETS.addedP50Ms}, added p99 ≤ ${TARGETS.addedP99Ms})`,
];

/** Table cells of one row, relative to the direct baseline. */
function cells(row: Row, direct: Measured | undefined): string[] {
  if (!isMeasured(row.result)) return [row.name, row.result.unavailable, '', '', '', '', '', '', '', '', ''];
  const m = row.result;
  const cpu = `${busy(m.rps)}; ${busy(m.streams)}`;
  if (!direct || m === direct) {
    return [row.name, ms(m.latency.p50), ms(m.latency.p99), '—', '—', rate(m.rps), ms(m.ttfb.p50), '—', rate(m.streams), cpu, 'baseline'];
  }
  const addedP50 = m.latency.p50 - direct.latency.p50;
  const addedP99 = m.latency.p99 - direct.latency.p99;
  const targets = [
    `req/s ${verdict(m.rps.perSecond >= TARGETS.rpsC64 && m.rps.failed === 0)}`,
    `p50 ${verdict(addedP50 <= TARGETS.addedP50Ms)}`,
    `p99 ${verdict(addedP99 <= TARGETS.addedP99Ms)}`,
  ].join(', ');
  return [
    row.name, ms(m.latency.p50), ms(m.latency.p99), ms(addedP50), ms(addedP99), rate(m.rps),
    ms(m.ttfb.p50), ms(m.ttfb.p50 - direct.ttfb.p50), rate(m.streams), cpu, targets,
  ];
}

/** A Markdown table (also readable as plain text: columns are padded). */
export function renderTable(rows: Row[], directName: string): string {
  const directRow = rows.find((r) => r.name === directName);
  const direct = directRow && isMeasured(directRow.result) ? directRow.result : undefined;
  const body = rows.map((r) => cells(r, direct));
  const all = [HEADER, ...body];
  const widths = HEADER.map((_, i) => Math.max(...all.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]): string => `| ${c.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(HEADER), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

function sh(command: string, args: string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** Date, machine, Node version and commit of this run. */
export function runInfo(root: string, settings: string): RunInfo {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match?.[1]) cpu = match[1].trim();
  } catch { /* keep os.cpus() */ }
  // The gateway is built from the working tree: say so when it differs from HEAD outside bench/ and the docs.
  const dirty = sh('git', ['status', '--porcelain', '--', '.', ':(exclude)bench', ':(exclude)docs', ':(exclude)*.md'], root);
  const commit = sh('git', ['rev-parse', '--short', 'HEAD'], root);
  return {
    date: new Date(),
    nproc: sh('nproc', ['--all'], root), // plain `nproc` counts only this (pinned) process's cores
    cpu,
    node: process.version,
    commit: dirty !== '' && dirty !== 'unknown' ? `${commit} (working tree modified)` : commit,
    idle: idlePolicy(),
    settings,
  };
}

/** Appends a dated section to bench/RESULTS.md (created with a title when missing). */
export function appendResults(path: string, info: RunInfo, table: string, notes: string[]): void {
  if (!existsSync(path)) writeFileSync(path, '# Benchmark results\n\nAppended by the bench scripts, newest last.\n');
  const stamp = `${info.date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const section = [
    '',
    `## ${stamp} — gateway overhead (\`npm run bench:gateway\`)`,
    '',
    `- Machine: nproc ${info.nproc}, CPU ${info.cpu}; Node ${info.node}; commit ${info.commit}; idle: ${info.idle}`,
    `- ${info.settings}`,
    ...notes.map((n) => `- ${n}`),
    '',
    table,
    '',
  ].join('\n');
  appendFileSync(path, section);
}
