/**
 * What a valid script is, for REST and MQTT alike (docs/decisions/one-admission-path.md): valid
 * UTF-8 (never decoded into U+FFFD and run), not blank, and at most `maxScriptBytes` UTF-8 bytes.
 */
import { isUtf8 } from 'node:buffer';
import { hash } from 'node:crypto';
import { DomainError } from '../errors.ts';

/** Default of `--max-script-bytes` (docs/api.md: 1 MiB). */
export const DEFAULT_MAX_SCRIPT_BYTES = 1024 * 1024;

/**
 * Decodes bytes that must be UTF-8 (a REST body, an MQTT payload). `what` names them in the
 * refusal, e.g. "Body" or "the payload".
 */
export function decodeUtf8(bytes: Buffer, what: string): string {
  if (!isUtf8(bytes)) {
    throw new DomainError('INVALID_REQUEST', `${what} is not valid UTF-8`);
  }
  return bytes.toString('utf8');
}

/** Refuses a blank or too large script; `subject` names it as its caller knows it. */
export function checkScript(script: string, maxScriptBytes: number, subject: string): void {
  if (script.trim() === '') throw new DomainError('INVALID_REQUEST', `${subject} must not be empty`);
  // Cheap bound first: UTF-8 needs at most 3 bytes per UTF-16 code unit.
  if (script.length * 3 <= maxScriptBytes) return;
  const bytes = Buffer.byteLength(script, 'utf8');
  if (bytes > maxScriptBytes) {
    throw new DomainError(
      'SCRIPT_TOO_LARGE',
      `${subject} is ${bytes} bytes of UTF-8; the limit is ${maxScriptBytes}`,
    );
  }
}

/** sha256 of a script, base64url: what idempotency comparisons keep once the script is dropped. */
export function hashScript(script: string): string {
  // One-shot crypto.hash (Node 20.12+): the same digest as createHash without its Hash object, a
  // third of the time; every MQTT script with a requestId is hashed.
  return hash('sha256', script, 'base64url');
}
