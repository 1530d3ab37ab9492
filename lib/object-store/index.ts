/**
 * Builds the configured object store from settings: `fs` (the embedded default, a directory) or
 * `s3` (any S3-compatible service). `openObjectStore` also prepares it at startup: with
 * `S3_CREATE_BUCKET=true` a missing bucket is created; otherwise nothing is created and a
 * missing bucket shows up at the first write (production buckets are provisioned, not guessed).
 */
import type { Settings } from '../settings';
import { FsObjectStore } from './fs-store';
import { S3ObjectStore } from './s3-store';
import type { ObjectStore } from './types';

export * from './types';
export { FsObjectStore } from './fs-store';
export { S3ObjectStore, type S3StoreOptions } from './s3-store';
export { uploadWithGrant, type UploadDeps, type UploadOutcome } from './upload';

export type ObjectStoreSettings = Pick<Settings,
  'OBJECT_STORE_BACKEND' | 'OBJECT_STORE_FS_ROOT' | 'S3_ENDPOINT' | 'S3_BUCKET' | 'S3_REGION' | 'S3_ACCESS_KEY_ID'
  | 'S3_SECRET_ACCESS_KEY' | 'S3_FORCE_PATH_STYLE' | 'S3_CREATE_BUCKET'>;

export function createObjectStore(settings: ObjectStoreSettings): ObjectStore {
  switch (settings.OBJECT_STORE_BACKEND) {
    case 'fs':
      return new FsObjectStore(settings.OBJECT_STORE_FS_ROOT);
    case 's3': {
      if (!settings.S3_BUCKET) throw new Error('OBJECT_STORE_BACKEND=s3 needs S3_BUCKET');
      const { S3_ACCESS_KEY_ID: accessKeyId, S3_SECRET_ACCESS_KEY: secretAccessKey } = settings;
      if (!accessKeyId !== !secretAccessKey) throw new Error('Set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither (the SDK\'s default credential chain)');
      return new S3ObjectStore({
        bucket: settings.S3_BUCKET,
        region: settings.S3_REGION,
        forcePathStyle: settings.S3_FORCE_PATH_STYLE,
        ...(settings.S3_ENDPOINT ? { endpoint: settings.S3_ENDPOINT } : {}),
        ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
      });
    }
  }
}

/** `createObjectStore`, then the startup preparation: the bucket is created only with `S3_CREATE_BUCKET=true`. */
export async function openObjectStore(settings: ObjectStoreSettings): Promise<ObjectStore> {
  const store = createObjectStore(settings);
  if (store instanceof S3ObjectStore && settings.S3_CREATE_BUCKET) await store.ensureBucket();
  return store;
}
