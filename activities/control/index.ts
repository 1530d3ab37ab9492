/**
 * Every activity the control worker registers (task queue `control`), built from its deps. Tests
 * build the same set over their own database and gateway.
 */
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import { createGrantActivities } from '../grants/grant-activities';
import type { GatewayGrantClient } from '../grants/gateway-grant-client';
import { createChatActivities } from './chat-activities';

export interface ControlActivityDeps {
  db: Db;
  settings: Settings;
  grants: GatewayGrantClient;
}

export function createControlActivities(deps: ControlActivityDeps) {
  return {
    ...createChatActivities({ db: deps.db, settings: deps.settings }),
    ...createGrantActivities({ db: deps.db, grants: deps.grants, settings: deps.settings }),
  };
}
