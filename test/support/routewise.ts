/**
 * Models built by the registry's own model builder for routewise tests: one `routewise` model
 * whose routes get base URLs `http://h<i>/v1` and labels `r<i>` unless given.
 */
import assert from 'node:assert/strict';
import type { Model, Route } from '../../gateway/registry';
import { registryBuildContext } from '../../gateway/registry';
import { buildModel } from '../../gateway/registry/model-builder';

const ctx = { ...registryBuildContext({}), file: 'models.yaml', warn: () => undefined };

export function routewiseModel(routes: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): Model {
  const outcome = buildModel({
    id: 'm', name: 'M', provider: 'generic_compat', router: 'routewise',
    route: routes.map((r, i) => ({ base_url: `http://h${i}/v1`, provider: `r${i}`, ...r })), ...extra,
  }, 0, ctx);
  assert.ok('model' in outcome);
  return outcome.model;
}

/** The provider labels of routes, in order. */
export const labels = (routes: readonly Route[]): string[] => routes.map((r) => r.providerLabel);
