/**
 * What single sign-on keeps between requests (docs/controller.md, "Single sign-on"): the role of
 * each signed-in user for as long as its tokens live, and the one-time hand-over codes that take
 * a token from the callback to the dashboard without a token in any URL. Both bounded; entries
 * expire in insertion order, so pruning looks at the front only.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IssuedToken } from '../../src/auth/token-store.ts';
import type { SignedIn } from '../oidc-sign-in.ts';
import type { Role, Scope } from '../users.ts';

const hash = (text: string): Buffer => createHash('sha256').update(text).digest();

interface Expiring {
  expiresAt: number;
}

/** Drops expired entries from the front, then the oldest beyond `max`. */
function prune<T extends Expiring>(map: Map<string, T>, now: number, max: number): void {
  for (const [key, entry] of map) {
    if (entry.expiresAt > now && map.size <= max) break;
    map.delete(key);
  }
}

interface SignedInUser extends Expiring {
  subject: string;
  role: Role;
  scope?: Scope | undefined;
}

/** The roles of signed-in users: what the provider's claims said at the latest sign-in. */
export class OidcUsers {
  readonly #users = new Map<string, SignedInUser>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxUsers = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Records a sign-in; answers true when the name belonged to another subject of the provider,
   * whose tokens must end (two accounts sharing a preferred_username never share a role).
   */
  signedIn(who: SignedIn): boolean {
    const before = this.get(who.userName);
    const other = before !== undefined && this.#users.get(who.userName)?.subject !== who.subject;
    this.#users.delete(who.userName);
    this.#users.set(who.userName, {
      subject: who.subject,
      role: who.role,
      ...(who.scope && { scope: who.scope }),
      expiresAt: this.now() + this.ttlMs,
    });
    prune(this.#users, this.now(), this.maxUsers);
    return other;
  }

  get(userName: string): { role: Role; scope?: Scope | undefined } | undefined {
    const user = this.#users.get(userName);
    if (!user || user.expiresAt <= this.now()) return undefined;
    return { role: user.role, ...(user.scope && { scope: user.scope }) };
  }
}

export interface Handover {
  token: IssuedToken;
  user: string;
  role: Role;
}

interface HandoverEntry extends Handover, Expiring {
  browserKeyHash: Buffer;
}

/** One-time codes for a fresh token, usable once, briefly, by the browser that signed in. */
export class Handovers {
  readonly #codes = new Map<string, HandoverEntry>();

  constructor(
    private readonly ttlMs = 60_000,
    private readonly maxCodes = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  add(handover: Handover, browserKey: string): string {
    const code = randomBytes(32).toString('base64url');
    prune(this.#codes, this.now(), this.maxCodes - 1);
    this.#codes.set(hash(code).toString('hex'), {
      ...handover,
      browserKeyHash: hash(browserKey),
      expiresAt: this.now() + this.ttlMs,
    });
    return code;
  }

  /** The token behind `code`, once; undefined for an unknown, used or expired code or another browser. */
  take(code: string, browserKey: string | undefined): Handover | undefined {
    const key = hash(code).toString('hex');
    const entry = this.#codes.get(key);
    this.#codes.delete(key);
    if (!entry || entry.expiresAt <= this.now()) return undefined;
    if (!timingSafeEqual(hash(browserKey ?? ''), entry.browserKeyHash)) return undefined;
    return { token: entry.token, user: entry.user, role: entry.role };
  }
}
