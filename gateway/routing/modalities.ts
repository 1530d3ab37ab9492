/**
 * Input modalities (docs/routing.md "Input modalities"): a request carrying images or audio is
 * admitted only to routes whose model accepts that input (`input_modalities`; `["text"]` when not
 * declared). Text-only requests pay one comparison: nothing here runs for them.
 */
import { AppError } from '../../lib/errors';
import type { Route } from '../registry';
import { keepRoutes } from './keep-routes';

/** What a request carries beyond text, as counted when its messages were read. */
export interface MediaCounts {
  readonly images?: number | undefined;
  readonly audio?: number | undefined;
}

/** Whether the request carries anything beyond text (the cheap test on the hot path). */
export function carriesMedia(counts: MediaCounts): boolean {
  return (counts.images ?? 0) > 0 || (counts.audio ?? 0) > 0;
}

/** The non-text modalities a request needs, in a fixed order (`image`, `audio`). */
export function requiredModalities(counts: MediaCounts): string[] {
  const needed: string[] = [];
  if ((counts.images ?? 0) > 0) needed.push('image');
  if ((counts.audio ?? 0) > 0) needed.push('audio');
  return needed;
}

function accepts(route: Route, needed: readonly string[]): boolean {
  for (const modality of needed) if (!route.inputModalities.includes(modality)) return false;
  return true;
}

/**
 * The routes of this request's order that accept every modality it carries. None left is a 503
 * `no_provider_available` (`AllCircuitsOpenError`) naming the modalities: no upstream is called.
 */
export function routesAccepting(routes: readonly Route[], modelId: string, counts: MediaCounts): readonly Route[] {
  const needed = requiredModalities(counts);
  return keepRoutes(routes, (route) => accepts(route, needed), () => new AppError('no_provider_available',
    `No provider available for model ${modelId}: AllCircuitsOpenError: no route accepts the request's input modalities (${needed.join(', ')})`));
}
