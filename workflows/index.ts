/** Every workflow the control worker registers. */
export { hostSelfCheck } from './host-self-check';
export { grantWorkflow } from './grant';
