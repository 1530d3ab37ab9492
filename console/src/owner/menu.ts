/** The owner workspace's menu (the pages are in ./index.tsx, loaded when first opened). */
import type { ConsoleArea } from '../pages';

export const ownerArea: ConsoleArea = {
  prefixes: ['/chats', '/settings'],
  heading: 'Workspace',
  access: 'agent.use',
  load: async () => (await import('./index')).ownerPages,
  menu: [
    { path: '/chats', label: 'Chats', access: 'agent.use' },
    { path: '/settings/usage', label: 'Usage', access: 'agent.use' },
    { path: '/settings/security', label: 'Security', access: 'agent.use' },
  ],
};
