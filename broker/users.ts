/**
 * Store broker users (README "Command line": `--user NAME:PASSWORD:ROLE`, `--users FILE`) and the
 * password check. A `device` user's name is its device id, so it must be a valid id.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ID_PATTERN } from '../bridge/contract/topics.ts';
import {
  DEFAULT_SCRYPT,
  isPasswordHash,
  parsePasswordHash,
  type ScryptHash,
  verifyPasswordHash,
} from '../src/auth/password-hash.ts';

export const BROKER_ROLES = ['device', 'controller', 'observer'] as const;
export type BrokerRole = (typeof BROKER_ROLES)[number];

export interface BrokerUser {
  name: string;
  password: string;
  role: BrokerRole;
}

/** Thrown for a malformed user spec or users file; the message never contains a password. */
export class UserSpecError extends Error {
  override readonly name = 'UserSpecError';
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** Checks one user; returns the problem (without the password) or undefined. */
export function userProblem(user: {
  name?: unknown;
  password?: unknown;
  role?: unknown;
}): string | undefined {
  const { name, password, role } = user;
  if (typeof name !== 'string' || name.length === 0) return 'the user name is empty';
  if (name.length > 256 || hasControlCharacter(name)) return `user name ${JSON.stringify(name)} is not valid`;
  if (typeof password !== 'string' || password.length === 0) return `user ${name}: the password is empty`;
  if (isPasswordHash(password) && !parsePasswordHash(password)) {
    return `user ${name}: the password hash is malformed (expected $scrypt$ln=N,r=R,p=P$salt$hash, as printed by regbridge hash-password)`;
  }
  if (typeof role !== 'string' || !(BROKER_ROLES as readonly string[]).includes(role)) {
    return `user ${name}: role ${JSON.stringify(role)} is not one of ${BROKER_ROLES.join(', ')}`;
  }
  // A device's name is its device id and becomes a topic level of its ACL (docs/mqtt.md).
  if (role === 'device' && !ID_PATTERN.test(name)) {
    return `user ${name}: a device user's name is its device id and must match [A-Za-z0-9_-]{1,64}`;
  }
  return undefined;
}

/**
 * `NAME:PASSWORD:ROLE`. The password may contain `:`, so the name ends at the first colon and the
 * role starts after the last one.
 */
export function parseUserSpec(spec: string): BrokerUser {
  const first = spec.indexOf(':');
  const last = spec.lastIndexOf(':');
  if (first <= 0 || last === first) {
    throw new UserSpecError('expected NAME:PASSWORD:ROLE (ROLE is device, controller or observer)');
  }
  const user = {
    name: spec.slice(0, first),
    password: spec.slice(first + 1, last),
    role: spec.slice(last + 1),
  };
  const problem = userProblem(user);
  if (problem) throw new UserSpecError(problem);
  return user as BrokerUser;
}

/**
 * Reads a users file. Two formats, told apart by the first non-blank character:
 * - a JSON array of `{"name", "password", "role"}` objects (starts with `[`);
 * - otherwise one `NAME:PASSWORD:ROLE` per line; blank lines and lines starting with `#` are skipped.
 * Errors name the file and line (or array index), never the password.
 */
export function loadUsersFile(path: string): BrokerUser[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new UserSpecError(`cannot read users file ${path} (${code})`);
  }
  const users = text.trimStart().startsWith('[') ? parseJsonUsers(path, text) : parseLineUsers(path, text);
  const seen = new Set<string>();
  for (const user of users) {
    if (seen.has(user.name)) throw new UserSpecError(`${path}: user ${user.name} appears twice`);
    seen.add(user.name);
  }
  return users;
}

function parseJsonUsers(path: string, text: string): BrokerUser[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserSpecError(`${path}: not valid JSON`);
  }
  if (!Array.isArray(json)) throw new UserSpecError(`${path}: expected a JSON array of users`);
  return json.map((entry: unknown, index) => {
    if (!entry || typeof entry !== 'object') throw new UserSpecError(`${path}[${index}]: expected an object`);
    const { name, password, role } = entry as Record<string, unknown>;
    const problem = userProblem({ name, password, role });
    if (problem) throw new UserSpecError(`${path}[${index}]: ${problem}`);
    return { name, password, role } as BrokerUser;
  });
}

function parseLineUsers(path: string, text: string): BrokerUser[] {
  const users: BrokerUser[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    try {
      users.push(parseUserSpec(line));
    } catch (error) {
      throw new UserSpecError(`${path}:${index + 1}: ${(error as Error).message}`);
    }
  }
  return users;
}

function digest(value: string | Buffer): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Stands in for a hashed user when the name is unknown: the same scrypt work either way. */
const DUMMY_HASH: ScryptHash = {
  ...DEFAULT_SCRYPT,
  salt: Buffer.alloc(16, 1),
  hash: Buffer.alloc(32),
};

/**
 * The users a broker accepts. A password is either given (compared in constant time through
 * SHA-256 digests) or an scrypt hash (src/auth/password-hash.ts, checked on the thread pool).
 */
export class UserDirectory {
  readonly #users = new Map<string, { user: BrokerUser; digest: Buffer; scrypt?: ScryptHash }>();
  #hashed = 0;

  constructor(users: readonly BrokerUser[] = []) {
    for (const user of users) this.add(user);
  }

  add(user: BrokerUser): void {
    const problem = userProblem(user);
    if (problem) throw new UserSpecError(problem);
    if (this.#users.has(user.name)) throw new UserSpecError(`user ${user.name} given twice`);
    const scrypt = isPasswordHash(user.password) ? parsePasswordHash(user.password) : undefined;
    if (scrypt) this.#hashed++;
    this.#users.set(user.name, {
      user: { ...user },
      digest: digest(user.password),
      ...(scrypt && { scrypt }),
    });
  }

  /** The entry of `name` as configured (password or hash, role), for reload comparisons. */
  get(name: string): BrokerUser | undefined {
    return this.#users.get(name)?.user;
  }

  names(): string[] {
    return [...this.#users.keys()];
  }

  get size(): number {
    return this.#users.size;
  }

  /**
   * The user when name and password match. Both sides are hashed to equal-length digests first so
   * `timingSafeEqual` applies whatever the lengths, and an unknown name costs the same comparison
   * (an scrypt one too when the directory holds hashes, so timing does not tell names apart).
   */
  async verify(name: string, password: Buffer | undefined): Promise<BrokerUser | undefined> {
    const entry = this.#users.get(name);
    if (entry?.scrypt) {
      const match = await verifyPasswordHash(password ?? Buffer.alloc(0), entry.scrypt);
      return match && password !== undefined ? entry.user : undefined;
    }
    if (!entry && this.#hashed > 0) await verifyPasswordHash(password ?? Buffer.alloc(0), DUMMY_HASH);
    const given = digest(password ?? Buffer.alloc(0));
    const expected = entry?.digest ?? digest(`\u0000unknown-user:${name}`);
    const match = timingSafeEqual(given, expected);
    return match && entry && password !== undefined ? entry.user : undefined;
  }
}
