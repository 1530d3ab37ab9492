/**
 * The registry currently served. Replaced whole (never mutated) when configuration changes, so a
 * request keeps the snapshot it started with.
 */
import { AppError } from '../../lib/errors';
import { canSee } from '../auth/caller';
import type { Role } from './types';
import type { Model, Registry } from './types';

export class RegistryHolder {
  constructor(public current: Registry) {}

  /**
   * Resolves a public id or alias the caller may see, else 404 (not found or not visible),
   * as that caller's role sees it (provider keys reserved for higher roles left out).
   */
  resolve(name: string, role: Role | undefined, surface: 'chat' | 'embeddings'): Model {
    const model = this.current.byName.get(name);
    if (!model || !canSee(role, model)) {
      throw new AppError('model_not_found', `The model '${name}' does not exist or you do not have access to it`, { param: 'model' });
    }
    const wanted = surface === 'chat' ? 'chat' : 'embedding';
    if (model.modelType !== wanted) {
      const other = wanted === 'chat' ? '/v1/embeddings' : '/v1/chat/completions';
      throw new AppError('invalid_request', `The model '${name}' is ${model.modelType === 'embedding' ? 'an embedding' : 'a chat'} model; use ${other}`, { param: 'model' });
    }
    return model.byRole?.get(role ?? 'free') ?? model;
  }
}
