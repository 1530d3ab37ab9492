/**
 * The guest's CPU idle policy, which decides c=1 latency on a VM more than any code path does.
 *
 * At c=1 every hop wakes an idle vCPU. With the `haltpoll` cpuidle governor and
 * `guest_halt_poll_ns` = 0 (this kind of VM boots with `haltpoll.guest_halt_poll_ns=0`) an idle
 * vCPU halts at once and every wake-up is a trip through the hypervisor; with the kernel's default
 * of 200,000 ns it polls briefly first. The runner records the policy with every result, and
 * `BENCH_GUEST_HALT_POLL_NS=<ns>` sets it for one run (root only) and puts the old value back when
 * the runner exits, however it exits.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const GOVERNOR = '/sys/devices/system/cpu/cpuidle/current_governor';
const HALT_POLL_NS = '/sys/module/haltpoll/parameters/guest_halt_poll_ns';

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** One line for the results, e.g. "cpuidle governor haltpoll, guest_halt_poll_ns 0 (halt polling off)". */
export function idlePolicy(): string {
  const governor = read(GOVERNOR);
  const pollNs = read(HALT_POLL_NS);
  const parts = [`cpuidle governor ${governor ?? 'unknown'}`];
  if (pollNs !== undefined) parts.push(`guest_halt_poll_ns ${pollNs}${pollNs === '0' ? ' (halt polling off)' : ''}`);
  return parts.join(', ');
}

/**
 * Applies `BENCH_GUEST_HALT_POLL_NS` when set; returns what it did, for the run's notes, or
 * undefined when the variable is unset. Throws when it is set but cannot be applied, so a run that
 * asked for a policy never silently measures another.
 */
export function applyHaltPollFromEnv(value = process.env.BENCH_GUEST_HALT_POLL_NS): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,10}$/.test(value)) throw new Error(`BENCH_GUEST_HALT_POLL_NS must be a whole number of nanoseconds, got "${value}"`);
  const before = read(HALT_POLL_NS);
  if (before === undefined) throw new Error(`BENCH_GUEST_HALT_POLL_NS is set but ${HALT_POLL_NS} does not exist (no haltpoll on this kernel)`);
  writeFileSync(HALT_POLL_NS, value);
  if (read(HALT_POLL_NS) !== value) throw new Error(`writing ${value} to ${HALT_POLL_NS} did not take`);
  process.on('exit', () => {
    try {
      writeFileSync(HALT_POLL_NS, before);
    } catch { /* best effort: the runner is exiting */ }
  });
  return `guest_halt_poll_ns set from ${before} to ${value} for this run (BENCH_GUEST_HALT_POLL_NS), restored on exit.`;
}
