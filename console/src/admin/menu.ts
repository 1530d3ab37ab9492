/** The admin console's menu (the pages are in ./index.tsx, loaded when first opened; keep both in sync). */
import type { ConsoleArea } from '../pages';

export const adminArea: ConsoleArea = {
  prefixes: ['/admin'],
  heading: 'Admin',
  access: 'admin',
  load: async () => (await import('./index')).adminPages,
  menu: [
    { path: '/admin', label: 'Overview', access: 'admin' },
    { path: '/admin/routing', label: 'Models and routes', access: 'admin' },
    { path: '/admin/providers', label: 'Providers', access: 'admin' },
    { path: '/admin/keys', label: 'Provider keys', access: 'admin' },
    { path: '/admin/visibility', label: 'Model visibility', access: 'admin' },
    { path: '/admin/users', label: 'Users', access: 'admin' },
    { path: '/admin/requests', label: 'Recent requests', access: 'admin' },
    { path: '/admin/playground', label: 'Playground', access: 'admin' },
    { path: '/admin/auth-blocks', label: 'Sign-in blocks', access: 'admin' },
    { path: '/admin/settings', label: 'Runtime settings', access: 'admin' },
    { path: '/admin/alerts', label: 'Alerts', access: 'admin' },
    { path: '/admin/health', label: 'Health', access: 'admin' },
    { path: '/admin/routing-status', label: 'Routing status', access: 'admin' },
  ],
};
