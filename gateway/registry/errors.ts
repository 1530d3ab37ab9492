/**
 * Registry configuration errors. `RegistryConfigError` stops startup (unknown router,
 * unknown router key, `api_key` with `api_keys`, invalid embeddings path…); the message names
 * the file, the model, the key and the fix.
 */
export class RegistryConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryConfigError';
  }
}

/** A problem that stops loading at the current model (earlier models stay). */
export class RegistryStopError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryStopError';
  }
}
