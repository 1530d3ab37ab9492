/**
 * Why a queued turn is not running yet: admission's answer, recorded on the turn
 * (`agent_turns.wait_reason`) and shown to its owner with a sentence. Waiting is not failing: the
 * turn stays `queued` and runs as soon as the reason is gone (docs/execution-profiles.md
 * "Waiting turns").
 */

/** Every reason admission may give for a turn to wait. */
export const WAIT_REASONS = [
  'no_host', 'host_full', 'host_offline', 'no_attested_host', 'host_not_attested', 'sandbox_pending', 'fork_at_anchor_not_attested',
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

const MESSAGES: Record<WaitReason, string> = {
  no_host: 'No execution host is online; the turn starts when one is.',
  host_full: 'Every execution host that can run this chat is busy; the turn starts when a slot frees up.',
  host_offline: "This chat's sandbox lives on a host that is offline or being removed; the turn starts when it is back.",
  no_attested_host: "No online host attests this chat's execution profile (for untrusted-vm-v1: an isolating runtime with its own kernel); the turn starts when one does.",
  host_not_attested: "This chat's host no longer attests its execution profile (its isolating runtime failed its preflight); the turn starts when it does again.",
  fork_at_anchor_not_attested: "This fork starts at an earlier turn of its chat, and the sandbox's host cannot cut a conversation back to a turn yet (no native-fork-at-anchor-v1); the turn starts when it can.",
  sandbox_pending: "An operator action on this chat's sandbox is in progress (stop, archive, delete, restore); the turn starts after it.",
};

/** The owner-facing sentence of a recorded reason (an unknown one, from a newer version, is named as it is). */
export function waitMessage(reason: string): string {
  return (MESSAGES as Record<string, string>)[reason] ?? `The turn is waiting (${reason}).`;
}
