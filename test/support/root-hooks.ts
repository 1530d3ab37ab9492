/**
 * Mocha root hooks: shared resources created lazily by tests are released once at the end.
 */
import { removeContainers } from './docker';
import { teardownTemporal } from './temporal';

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await teardownTemporal();
    await removeContainers().catch(() => 0);
  },
};
