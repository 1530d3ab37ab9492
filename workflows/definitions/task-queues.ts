/** Task queue names shared by workflows, workers and the API. */

/** Task queue of one execution host: its Docker work runs only there. */
export function hostTaskQueue(hostId: string): string {
  return `host:${hostId}`;
}
