/**
 * Builds the configured object store from settings. `fs` is the embedded default; `s3` is
 * accepted by the settings schema but not implemented yet, and refusing it here keeps a
 * deployment from silently writing archives somewhere it did not ask for.
 */
import type { Settings } from '../settings';
import { FsObjectStore } from './fs-store';
import type { ObjectStore } from './types';

export * from './types';
export { FsObjectStore } from './fs-store';

export function createObjectStore(settings: Pick<Settings, 'OBJECT_STORE_BACKEND' | 'OBJECT_STORE_FS_ROOT'>): ObjectStore {
  switch (settings.OBJECT_STORE_BACKEND) {
    case 'fs':
      return new FsObjectStore(settings.OBJECT_STORE_FS_ROOT);
    case 's3':
      throw new Error('OBJECT_STORE_BACKEND=s3 is not implemented yet: use OBJECT_STORE_BACKEND=fs (OBJECT_STORE_FS_ROOT) for now');
  }
}
