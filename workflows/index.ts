/** Every workflow the control worker registers. */
export { hostSelfCheck } from './host-self-check';
export { chatWorkflow } from './chat';
export { grantWorkflow } from './grant';
export { titleWorkflow } from './title';
export { workspaceArchive } from './workspace-archive';
export { sandboxGroupWorkflow } from './sandbox-group';
export { hostWorkflow } from './host';
export { deletionSweepWorkflow } from './deletion-sweep';
export { idleSandboxStopWorkflow } from './idle-sandbox-stop';
export { publishWorkflow } from './publish';
export { publicStatsWorkflow } from './public-stats';
