/**
 * A small history router for the console: every page has a real URL under `/console/` (a reload or
 * a shared link opens the same page), `navigate` pushes a path, and pages match patterns such as
 * `/chats/:jobId`. The gateway answers `index.html` for every console path that is not an asset.
 */
import { useEffect, useState } from 'preact/hooks';

export { matchPath } from './paths';

/** Where the console lives on the origin. */
export const BASE = '/console';

/** The current console path (without `BASE`), with its query. */
export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const { pathname, search } = window.location;
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) || '/' : pathname;
  return { path, query: new URLSearchParams(search) };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

/** Goes to a console path (`/admin/routing`, `/chats/12?tab=events`); `replace` keeps history short. */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${path.startsWith('/') ? path : `/${path}`}`;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

/** The current location, re-rendering on navigation. */
export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = (): void => setLocation(current());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return location;
}

/** The href of a console path, for `<a>` elements. */
export function href(path: string): string {
  return `${BASE}${path}`;
}

/** Click handler for in-console links: plain clicks navigate without a reload; modified clicks open normally. */
export function onLinkClick(event: MouseEvent): void {
  const anchor = (event.currentTarget as HTMLAnchorElement | null) ?? undefined;
  if (!anchor || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(anchor.href);
  if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return;
  event.preventDefault();
  navigate(url.pathname.slice(BASE.length) + url.search);
}
