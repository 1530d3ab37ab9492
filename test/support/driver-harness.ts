/**
 * Driver tests' harness: an `EventSink` that records events in order, and a `DriverInput` with
 * test defaults (a two-minute deadline, a fresh abort signal) over a real container.
 */
import type { AgentEventType, DriverInput, EventSink, SandboxExec } from '../../activities/agent/types';

export interface RecordedEvent {
  type: AgentEventType;
  payload: Record<string, unknown>;
  isError: boolean;
}

export interface RecordingSink extends EventSink {
  readonly events: RecordedEvent[];
  types(): AgentEventType[];
  ofType(type: AgentEventType): RecordedEvent[];
}

export function recordingSink(): RecordingSink {
  const events: RecordedEvent[] = [];
  return {
    events,
    emit: (type, payload, options) => {
      events.push({ type, payload, isError: options?.isError ?? false });
      return Promise.resolve();
    },
    types: () => events.map((e) => e.type),
    ofType: (type) => events.filter((e) => e.type === type),
  };
}

/** A grant-shaped secret; tests assert it is sent as the bearer and never shown. */
export const TEST_GRANT = 'agr_test_0123456789abcdef';

export function driverInput(sandbox: SandboxExec, overrides: Partial<DriverInput> & Pick<DriverInput, 'gatewayUrl' | 'events'>): DriverInput {
  return {
    prompt: 'Do the task.',
    model: 'fake-model',
    grantToken: TEST_GRANT,
    jobId: 'job-test-1',
    turnSeq: 1,
    sessionDir: '/home/member-10001/.agent/job-test-1',
    sandbox,
    signal: new AbortController().signal,
    deadline: Date.now() + 120_000,
    ...overrides,
  };
}
