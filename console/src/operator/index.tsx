/** The agent operator pages (hosts, sandboxes, runs, audit log, settings): one chunk, loaded when first opened. */
import type { ConsolePage } from '../pages';
import { AuditLogPage } from './audit';
import { HostsPage } from './hosts';
import { OverviewPage } from './overview';
import { RunsPage } from './runs';
import { SandboxesPage } from './sandboxes';
import { SettingsPage } from './settings';

export const operatorPages: readonly ConsolePage[] = [
  { path: '/admin/agent', title: 'Agent operations', access: 'agent.admin', component: OverviewPage },
  { path: '/admin/agent/hosts', title: 'Hosts', access: 'agent.admin', component: HostsPage },
  { path: '/admin/agent/sandboxes', title: 'Sandboxes', access: 'agent.admin', component: SandboxesPage },
  { path: '/admin/agent/runs', title: 'Run activity', access: 'agent.admin', component: RunsPage },
  { path: '/admin/agent/runs/:jobId', title: 'Run activity', access: 'agent.admin', component: RunsPage },
  { path: '/admin/agent/audit', title: 'Audit log', access: 'agent.admin', component: AuditLogPage },
  { path: '/admin/agent/settings', title: 'Settings', access: 'agent.admin', component: SettingsPage },
];
