/** The agent operator pages (hosts, sandboxes, audit log, settings). */
import type { JSX } from 'preact';
import type { ConsolePage } from '../pages';
import { Page } from '../ui/parts';

function Overview(): JSX.Element {
  return <Page title="Agent operations"><p>Hosts, sandboxes, audit log and settings of the agent control plane.</p></Page>;
}

export const operatorPages: readonly ConsolePage[] = [
  { path: '/admin/agent', title: 'Agent operations', access: 'agent.admin', component: Overview },
];
