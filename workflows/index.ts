/** Every workflow the control worker registers. */
export { hostSelfCheck } from './host-self-check';
export { workspaceArchive } from './workspace-archive';
