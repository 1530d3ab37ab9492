/**
 * Names of a sandbox group's Docker objects, shared by the host's activities (which create them)
 * and the API (which addresses a group's container, e.g. for workspace downloads).
 */

import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Where a container's model-relay directory is mounted (read-only; docs/agent-drivers.md "Model relay"). */
export const RELAY_MOUNT = '/run/agent-relay';

/** The model-relay root of a host: `AGENT_RELAY_DIR`, else `<tmpdir>/agent-relay`, absolute. */
export function relayRoot(configured: string | undefined): string {
  return resolve(configured ?? join(tmpdir(), 'agent-relay'));
}

/** A container's model-relay directory on the host: short (socket paths are limited), one per container. */
export function relayHostDir(root: string, containerName: string): string {
  return join(root, createHash('sha256').update(containerName).digest('hex').slice(0, 16));
}

const GROUP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

/** The container name of a group: `sbx-<groupId>`. */
export function sandboxContainerName(groupId: string): string {
  if (!GROUP_ID.test(groupId)) throw new Error(`Invalid sandbox group id ${JSON.stringify(groupId)}`);
  return `sbx-${groupId}`;
}
