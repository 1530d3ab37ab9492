/**
 * Turns the control-plane measurements into the printed tables and the dated section appended to
 * bench/RESULTS.md (machine, Node, commit as in the other benches).
 */
import { appendFileSync } from 'node:fs';
import type { RunInfo } from '../gateway/report';
import { CPU_GROUPS, type CpuSeconds } from './cpu-split';
import { percentile, type LatencyResult, type TurnLatency } from './latency';
import type { DriverTurns } from './drivers';
import type { OrderingRun } from './ordering';
import type { ThroughputResult } from './throughput';
import { VIOLATION_KINDS, type Violations } from './violations';

export interface ControlPlaneResults {
  slots: number;
  latency: LatencyResult;
  throughput: ThroughputResult;
  ordering: OrderingRun;
  orderingTurns: number;
  peakFromTimestamps: number;
  violations: Violations;
  /** Warm turns by driver (absent when the phase did not run). */
  drivers?: DriverTurns[];
}

function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => `| ${r.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(0) : 'n/a');
const states = (s: Record<string, number>): string => Object.entries(s).sort().map(([k, v]) => `${k} ${v}`).join(', ');

function latencyRows(name: string, turns: TurnLatency[]): string[][] {
  const started = turns.map((t) => t.startedMs);
  const driver = turns.map((t) => t.firstDriverEventMs);
  return [
    [`${name}: POST → turn_started on SSE`, String(turns.length), ms(percentile(started, 50)), ms(percentile(started, 95)), ms(Math.max(...started))],
    [`${name}: POST → first driver event (message) on SSE`, String(turns.length), ms(percentile(driver, 50)), ms(percentile(driver, 95)), ms(Math.max(...driver))],
  ];
}

/** CPU ms per turn by group; `other` = machine busy time not in a named group (other sessions, short-lived processes). */
function cpuCells(cpu: CpuSeconds, turns: number, seconds: number): string[] {
  const named = CPU_GROUPS.filter((g) => g !== 'machine').reduce((n, g) => n + cpu[g], 0);
  const perTurn = (v: number): string => (Number.isFinite(v) ? ((v * 1000) / turns).toFixed(0) : 'n/a');
  return [
    `${perTurn(cpu.machine)} (${((100 * cpu.machine) / seconds).toFixed(0)} % of 1 core)`,
    ...CPU_GROUPS.filter((g) => g !== 'machine').map((g) => perTurn(cpu[g])),
    perTurn(cpu.machine - named),
  ];
}

export function renderTables(r: ControlPlaneResults): string {
  const latency = table(['Queue → first event', 'turns', 'p50 ms', 'p95 ms', 'max ms'], [
    ...latencyRows('cold (new chat, container created)', r.latency.cold),
    ...latencyRows('warm (follow-up turn, container running)', r.latency.warm),
  ]);
  const o = r.ordering;
  const rates = table(['Run', 'turns', 'seconds', 'turns/s', 'turn states'], [
    [`no-op agent, ${r.throughput.chats} warm chats × ${r.throughput.turns / r.throughput.chats} turns, slots ${r.slots}`, String(r.throughput.turns), r.throughput.seconds.toFixed(1), r.throughput.turnsPerSecond.toFixed(2), states(r.throughput.states)],
    [`ordering run, ${o.jobIds.length} new chats × ${r.orderingTurns / o.jobIds.length} turns (cold containers, cancels, worker restart), slots ${r.slots}`, String(r.orderingTurns), o.seconds.toFixed(1), (r.orderingTurns / o.seconds).toFixed(2), states(o.states)],
  ]);
  const t = r.throughput;
  const cpu = table(['CPU ms per turn', 'machine busy', ...CPU_GROUPS.filter((g) => g !== 'machine'), 'other'], [
    ['throughput run', ...cpuCells(t.cpu, t.turns, t.seconds)],
    ['ordering run', ...cpuCells(o.cpu, r.orderingTurns, o.seconds)],
  ]);
  const violations = table(['Ordering-run violation', 'count (target 0)'], [
    ...VIOLATION_KINDS.map((k) => [k, String(r.violations.counts[k])]),
    ['total', String(VIOLATION_KINDS.reduce((n, k) => n + r.violations.counts[k], 0))],
  ]);
  const drivers = r.drivers ? [driverTable(r.drivers)] : [];
  return [latency, ...drivers, rates, cpu, violations].join('\n\n');
}

/** The warm-turn rows by driver (issue 26: the native drivers next to the built-in one). */
export function driverTable(drivers: readonly DriverTurns[]): string {
  return table(['Warm turn, POST → turn end (one model call)', 'turns', 'p50 ms', 'max ms', 'states'], drivers.map((d) => [
    d.driver === 'builtin' ? 'builtin driver (host tool loop)' : `${d.driver} (CLI in the sandbox, model relay)`,
    String(d.turnMs.length), ms(percentile(d.turnMs, 50)), ms(Math.max(...d.turnMs)), states(d.states),
  ]));
}

export function orderingNotes(r: ControlPlaneResults): string[] {
  const o = r.ordering;
  const restart = o.restart
    ? `control worker stopped at ${o.restart.atSecond.toFixed(1)} s (${o.restart.atTurnsDone}/${r.orderingTurns} turns terminal), down ${(o.restart.downMs / 1000).toFixed(0)} s, then started again`
    : 'control worker restart did not happen';
  const t = r.throughput;
  const notes = [
    `Throughput run, server side (PostgreSQL, medians): a turn waited ${ms(t.medianWaitMs)} ms from queued to started (behind its chat's earlier turns) and ran ${ms(t.medianRunMs)} ms from started to finished (grant, sandbox check, host activity, \`docker exec\` of the agent, events, finish).`,
    `Ordering run: cancels answered ${o.cancelAnswers.cancelled} cancelled-while-queued, ${o.cancelAnswers.running} stop-requested (running), ${o.cancelAnswers.conflict} 409 (already finished); ${restart}.`,
    `Peak running attempts: ${o.maxSampledRunning} sampled (${o.samples} snapshots of \`agent_attempts\`, every 100 ms) vs ${r.slots} slots; ${r.peakFromTimestamps} from the attempts' started_at/finished_at (stamped with clock_timestamp() when the slot is taken and released).`,
  ];
  if (o.errors.length > 0) notes.push(`Ordering run client errors: ${o.errors.length} (first: ${o.errors[0]})`);
  for (const kind of VIOLATION_KINDS) {
    for (const example of r.violations.examples[kind] ?? []) notes.push(`${kind}: ${example}`);
  }
  return notes;
}

/** Appends a dated section to bench/RESULTS.md. */
export function appendResults(path: string, info: RunInfo, r: ControlPlaneResults, layout: string[]): void {
  const stamp = `${info.date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const section = [
    '',
    `## ${stamp} — agent control plane (\`npm run bench:control-plane\`)`,
    '',
    `- Machine: nproc ${info.nproc}, CPU ${info.cpu}; Node ${info.node}; commit ${info.commit}`,
    `- ${info.settings}`,
    ...layout.map((n) => `- ${n}`),
    ...orderingNotes(r).map((n) => `- ${n}`),
    '',
    renderTables(r),
    '',
  ].join('\n');
  appendFileSync(path, section);
}
