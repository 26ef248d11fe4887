/**
 * User name / password checks for `/api/authenticate` (docs/api.md). Passwords are
 * compared in constant time: both sides are hashed with sha256 (equal lengths whatever the
 * input) and compared with timingSafeEqual; an unknown user name is compared against a random
 * digest, so the answer takes the same work whether the user exists or not.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface UserSpec {
  readonly name: string;
  readonly password: string;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export class Credentials {
  /** Password digests by user name; the plain passwords are not kept. */
  private readonly digests = new Map<string, Buffer>();
  /** Compared against when the user is unknown, so that path does the same work. */
  private readonly decoy = randomBytes(32);

  constructor(users: readonly UserSpec[]) {
    for (const user of users) this.digests.set(user.name, digest(user.password));
  }

  get size(): number {
    return this.digests.size;
  }

  has(userName: string): boolean {
    return this.digests.has(userName);
  }

  /** True when `userName` exists and `password` is its password. */
  verify(userName: string, password: string): boolean {
    const expected = this.digests.get(userName);
    const matches = timingSafeEqual(digest(password), expected ?? this.decoy);
    return expected !== undefined && matches;
  }
}
