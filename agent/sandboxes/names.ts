/**
 * Names of a sandbox group's Docker objects, shared by the host's activities (which create them)
 * and the API (which addresses a group's container, e.g. for workspace downloads).
 */

const GROUP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

/** The container name of a group: `sbx-<groupId>`. */
export function sandboxContainerName(groupId: string): string {
  if (!GROUP_ID.test(groupId)) throw new Error(`Invalid sandbox group id ${JSON.stringify(groupId)}`);
  return `sbx-${groupId}`;
}
