/**
 * Mocha root hooks: shared resources created lazily by tests are released once at the end.
 */
import { removeContainers, removeTestDiskRoot } from './docker';
import { teardownTemporal } from './temporal';

const runEndHooks: Array<() => Promise<void>> = [];

/** Registers a release of a lazily created resource, run once at the end of the run (keeps heavy modules out of this file). */
export function atRunEnd(release: () => Promise<void>): void {
  runEndHooks.push(release);
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await teardownTemporal();
    for (const release of runEndHooks.splice(0)) await release().catch(() => undefined);
    await removeContainers().catch(() => 0);
    await removeTestDiskRoot().catch(() => undefined);
  },
};
