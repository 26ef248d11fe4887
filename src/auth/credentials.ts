/**
 * User name / password checks for `/api/authenticate` (docs/api.md): a literal password is
 * compared in constant time (sha256 both sides, timingSafeEqual), a `regbridge hash-password` value
 * with scrypt on the thread pool (docs/security.md). An unknown name costs the same work.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  DEFAULT_SCRYPT,
  isPasswordHash,
  parsePasswordHash,
  type ScryptHash,
  verifyPasswordHash,
} from './password-hash.ts';

export interface UserSpec {
  readonly name: string;
  readonly password: string;
}

/** Why `password` cannot be a configured password (never quoting it), or undefined. */
export function passwordProblem(password: string): string | undefined {
  if (password.length === 0) return 'the password is empty';
  if (isPasswordHash(password) && !parsePasswordHash(password)) {
    return 'the password hash is malformed (expected $scrypt$ln=N,r=R,p=P$salt$hash, as printed by regbridge hash-password)';
  }
  return undefined;
}

function digest(text: string | Buffer): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Stands in for a hashed user when the name is unknown: the same scrypt work either way. */
const DECOY_HASH: ScryptHash = { ...DEFAULT_SCRYPT, salt: Buffer.alloc(16, 1), hash: Buffer.alloc(32) };

interface Entry {
  /** sha256 of the configured value (a literal password, or the hash text for change detection). */
  readonly digest: Buffer;
  readonly scrypt?: ScryptHash;
}

export class Credentials {
  /** By user name; plain passwords are not kept. */
  private readonly entries = new Map<string, Entry>();
  /** Compared against when the user is unknown, so that path does the same work. */
  private readonly decoy = randomBytes(32);
  private hashed = 0;

  /** Throws for a malformed hash (the message names the user, never the value). */
  constructor(users: readonly UserSpec[]) {
    for (const user of users) {
      const problem = passwordProblem(user.password);
      if (problem) throw new Error(`user ${user.name}: ${problem}`);
      const scrypt = isPasswordHash(user.password) ? parsePasswordHash(user.password) : undefined;
      if (scrypt) this.hashed++;
      this.entries.set(user.name, { digest: digest(user.password), ...(scrypt && { scrypt }) });
    }
  }

  get size(): number {
    return this.entries.size;
  }

  has(userName: string): boolean {
    return this.entries.has(userName);
  }

  /** True when `userName` exists and `password` is its password (or matches its hash). */
  async verify(userName: string, password: string): Promise<boolean> {
    const entry = this.entries.get(userName);
    if (entry?.scrypt) return verifyPasswordHash(Buffer.from(password, 'utf8'), entry.scrypt);
    if (!entry && this.hashed > 0) await verifyPasswordHash(Buffer.from(password, 'utf8'), DECOY_HASH);
    const matches = timingSafeEqual(digest(password), entry?.digest ?? this.decoy);
    return entry !== undefined && matches;
  }
}
