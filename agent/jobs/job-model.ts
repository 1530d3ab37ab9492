/**
 * The model check of job creation (docs/agent-api.md "Create a job"): before anything is written,
 * the gateway (the only holder of the model registry) is asked whether the owner may run agent
 * turns on the named model, so a missing or forbidden model is refused at once (404/403) rather
 * than failing the first turn when its grant is issued. Answers are the API's own sentences; the
 * gateway's text goes to the log only.
 *
 * Without grant dispatch configured the check is skipped: no grant can be issued then, so the
 * turn fails anyway, with its own plain message. A gateway that does not answer (or answers
 * anything unexpected) is 503: nothing is created, and the owner is told to try again.
 */
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import { GrantDispatchError, type GatewayGrantClient } from '../grants/gateway-grant-client';

/** The public id of `model` (an alias resolves) for owner `userId`; throws the owner-facing refusal. */
export async function checkJobModel(options: { grants: GatewayGrantClient | undefined; userId: number; model: string; log: Logger }): Promise<string> {
  const { grants, userId, model, log } = options;
  if (!grants) return model;
  try {
    return (await grants.checkModel(userId, model)).model;
  } catch (err) {
    if (!(err instanceof GrantDispatchError)) throw err;
    const refusal = refusalOf(err, model);
    if (refusal) throw refusal;
    log.warn({ event: 'agent_model_check_failed', status: err.status, timed_out: err.timedOut, detail: err.message, model }, 'model check at the gateway failed');
    throw new AppError('service_unavailable', 'The model could not be checked because the gateway did not answer; nothing was created, try again shortly', { cause: err });
  }
}

function refusalOf(err: GrantDispatchError, model: string): AppError | undefined {
  const options = { cause: err, param: 'model' };
  if (err.status === 404 && err.code === 'model_not_found') return new AppError('model_not_found', `The model '${model}' does not exist`, options);
  if (err.status === 403) return new AppError('forbidden', `Your account's role may not use the model '${model}'`, options);
  if (err.status === 400 && err.code === 'invalid_request') return new AppError('invalid_request', `The model '${model}' is not a chat model; agent jobs need one`, options);
  if (err.status === 409) return new AppError('forbidden', 'Your account cannot start jobs (it is suspended or deleted)', { cause: err });
  return undefined;
}
