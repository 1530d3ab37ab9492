/**
 * Whether an owner may run agent turns on a model, asked by the control plane before it creates a
 * job (docs/agent-api.md "Create a job"), so a job naming a model that does not exist or that the
 * owner's role may not use is refused at once instead of failing later when its grant is issued.
 * The same rules as a grant and an inference call: the name is a public id or an alias of the
 * served registry, the owner's current role meets the model's `required_role`, and
 * agents call `/v1/chat/completions`, so the model is a chat model.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { canSee } from '../auth/caller';
import { ROLES, type Model, type Registry, type Role } from '../registry/types';

/**
 * The model `name` resolves to for owner `userId`: 404 `not_found` for an unknown owner, 409 for a
 * suspended or deleted one, 404 `model_not_found` for an unknown model, 403 when the owner's role
 * is below the model's `required_role`, 400 for a model that is not a chat model.
 */
export async function checkOwnerModel(db: Db, registry: Registry, userId: number, name: string): Promise<Model> {
  const user = await db('users').where({ id: userId })
    .first<{ role: string; suspended_at: Date | null; deleted_at: Date | null } | undefined>('role', 'suspended_at', 'deleted_at');
  if (!user) throw new AppError('not_found', `User ${userId} not found`);
  if (user.deleted_at) throw new AppError('conflict', `User ${userId} is deleted`);
  if (user.suspended_at) throw new AppError('conflict', `User ${userId} is suspended`);
  const model = registry.byName.get(name);
  if (!model) throw new AppError('model_not_found', `The model '${name}' does not exist`, { param: 'model' });
  const role: Role = ROLES.includes(user.role as Role) ? (user.role as Role) : 'free';
  if (!canSee(role, model)) {
    throw new AppError('forbidden', `The model '${model.id}' requires the role '${model.requiredRole ?? 'free'}'; the owner's role is '${role}'`, { param: 'model' });
  }
  if (model.modelType !== 'chat') throw new AppError('invalid_request', `The model '${model.id}' is not a chat model`, { param: 'model' });
  return model;
}
