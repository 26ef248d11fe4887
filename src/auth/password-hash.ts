/**
 * scrypt password hashes for users files (`regbridge hash-password` prints one). The format is a
 * PHC string: `$scrypt$ln=14,r=8,p=1$<salt>$<hash>` (salt and hash base64 without padding), so
 * it holds no `:` and fits the `NAME:PASSWORD:ROLE` line as its password. Verification runs on
 * libuv's thread pool (crypto.scrypt), never blocking the broker's event loop.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const PREFIX = '$scrypt$';
const PATTERN =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,})\$([A-Za-z0-9+/]{32,})$/;
/** N = 2^14, r = 8: 16 MiB and some 30-60 ms per check (OWASP's minimum for scrypt). */
export const DEFAULT_SCRYPT = { ln: 14, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

export interface ScryptHash {
  ln: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

export function isPasswordHash(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** The parsed hash, or undefined when `value` is not a well-formed one. */
export function parsePasswordHash(value: string): ScryptHash | undefined {
  const match = PATTERN.exec(value);
  if (!match) return undefined;
  const [ln, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Bounds keep a hostile or mistyped file from asking for gigabytes per login.
  if (ln < 10 || ln > 20 || r < 1 || r > 32 || p < 1 || p > 4) return undefined;
  return { ln, r, p, salt: Buffer.from(match[4]!, 'base64'), hash: Buffer.from(match[5]!, 'base64') };
}

function derive(
  password: Buffer | string,
  parameters: Omit<ScryptHash, 'hash'>,
  keyBytes: number,
): Promise<Buffer> {
  const N = 2 ** parameters.ln;
  return new Promise((resolve, reject) =>
    scrypt(
      password,
      parameters.salt,
      keyBytes,
      { N, r: parameters.r, p: parameters.p, maxmem: 256 * N * parameters.r + 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    ),
  );
}

const b64 = (buffer: Buffer): string => buffer.toString('base64').replace(/=+$/, '');

export async function hashPassword(
  password: string,
  parameters: { ln: number; r: number; p: number } = DEFAULT_SCRYPT,
): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, { ...parameters, salt }, KEY_BYTES);
  return `${PREFIX}ln=${parameters.ln},r=${parameters.r},p=${parameters.p}$${b64(salt)}$${b64(hash)}`;
}

/** Constant-time comparison of `password` with a parsed hash. */
export async function verifyPasswordHash(password: Buffer, stored: ScryptHash): Promise<boolean> {
  const derived = await derive(password, stored, stored.hash.length);
  return timingSafeEqual(derived, stored.hash);
}
