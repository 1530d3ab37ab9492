/**
 * Secrets stored encrypted at rest (the credential fields of the admin settings, docs/agent-admin.md):
 * AES-256-GCM under a key derived with HKDF-SHA-256 from a configured key of at least 32 bytes.
 * Each value is bound to its name (the additional authenticated data), so a sealed value copied
 * to another name, or altered, fails to open instead of yielding another secret.
 *
 * Format: `v1.<iv>.<ciphertext>.<tag>` (base64url parts; a 12-byte random IV per seal).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const INFO = 'agent-settings-v1';

/** A sealed value that cannot be opened: wrong key, another name's value, or altered bytes. */
export class SealedSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedSecretError';
  }
}

export class SecretSealer {
  private readonly key: Buffer;

  /**
   * `secret`: the configured key (at least 32 bytes, checked where it is loaded); `purpose`: the
   * HKDF info, so one key never seals two kinds of secret with the same derived key (default: the
   * admin settings').
   */
  constructor(secret: string, purpose: string = INFO) {
    if (Buffer.byteLength(secret) < 32) throw new Error('A sealing key must be at least 32 bytes');
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), purpose, 32));
  }

  seal(name: string, plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(name, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  open(name: string, sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION) throw new SealedSecretError(`the stored value of ${name} is not a sealed secret this version can read`);
    const [, iv, body, tag] = parts as [string, string, string, string];
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(name, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedSecretError(`the stored value of ${name} cannot be decrypted with the configured key (another key, or altered)`);
    }
  }
}
