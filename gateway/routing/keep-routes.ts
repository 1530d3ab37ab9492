/**
 * The one way a request's route order is narrowed by what the request needs (its surface's API,
 * structured output, input modalities): keep the routes that can serve it, in order, or refuse
 * the request before any upstream is called when none is left.
 */
import type { AppError } from '../../lib/errors';
import type { Route } from '../registry';

/** The routes of `routes` that `keep` accepts, in order; none left throws `refusal()`. */
export function keepRoutes(routes: readonly Route[], keep: (route: Route) => boolean, refusal: () => AppError): readonly Route[] {
  const usable = routes.filter(keep);
  if (usable.length === 0) throw refusal();
  return usable;
}
