/**
 * Opaque bearer tokens (docs/api.md, `--token-ttl`): 32 random bytes, base64url, of which only the
 * sha256 is kept, so a heap dump reveals none. Insertion order is expiry order, so expired tokens
 * are pruned from the Map's front; past `maxTokens` the oldest are dropped (401, log in again).
 */
import { hash, randomBytes } from 'node:crypto';

export const DEFAULT_MAX_TOKENS = 10_000;

export interface TokenStoreOptions {
  /** Lifetime of a token, seconds. */
  ttlSeconds: number;
  maxTokens?: number;
  /** Clock in ms since the epoch; tests inject one to expire tokens without sleeping. */
  now?: () => number;
}

export interface IssuedToken {
  token: string;
  tokenType: 'Bearer';
  /** Seconds until the token expires. */
  expiresIn: number;
}

interface Entry {
  readonly userName: string;
  readonly expiresAt: number;
}

/** A live token as its holders see it: `key` names it without being it (a hash). */
export interface TokenSession {
  readonly key: string;
  readonly userName: string;
  /** ms since the epoch. */
  readonly expiresAt: number;
}

/** A token's length: 32 bytes in base64url, no padding. */
export const TOKEN_LENGTH = 43;

/** A well-formed token: 32 bytes in base64url, no padding. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Whether `token` has the form of the tokens this store issues. (A character loop instead of the
 * expression was tried: V8's compiled expression costs a fifth of its instructions.)
 */
export function isTokenShaped(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

function hashToken(token: string): string {
  return hash('sha256', token, 'base64url');
}

export class TokenStore {
  private readonly ttlMs: number;
  private readonly maxTokens: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  /** Told of each token revoked or dropped for room before its expiry (its key). */
  private readonly dropListeners = new Set<(key: string) => void>();

  constructor(options: TokenStoreOptions) {
    this.ttlMs = options.ttlSeconds * 1000;
    this.maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  issue(userName: string): IssuedToken {
    this.prune();
    const token = randomBytes(32).toString('base64url');
    this.entries.set(hashToken(token), { userName, expiresAt: this.now() + this.ttlMs });
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.maxTokens) break;
      this.entries.delete(key);
      this.dropped(key);
    }
    return { token, tokenType: 'Bearer', expiresIn: this.ttlMs / 1000 };
  }

  /** The user a live token was issued to; undefined for a malformed, unknown or expired token. */
  verify(token: string): string | undefined {
    return isTokenShaped(token) ? this.verifyShaped(token) : undefined;
  }

  /** verify() for a token whose shape the caller has already checked with isTokenShaped(). */
  verifyShaped(token: string): string | undefined {
    const key = hashToken(token);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.userName;
  }

  /** The live session of `token`, or undefined. */
  session(token: string): TokenSession | undefined {
    if (!isTokenShaped(token)) return undefined;
    const key = hashToken(token);
    const userName = this.verifyShaped(token);
    const entry = this.entries.get(key);
    return userName === undefined || !entry ? undefined : { key, userName, expiresAt: entry.expiresAt };
  }

  /** Whether the token named by `key` is still live. */
  isLive(key: string): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.expiresAt > this.now();
  }

  /** Ends `token` at once (logout); whoever holds a session of it is told. */
  revoke(token: string): boolean {
    if (!isTokenShaped(token)) return false;
    const key = hashToken(token);
    if (!this.entries.delete(key)) return false;
    this.dropped(key);
    return true;
  }

  onDrop(listener: (key: string) => void): () => void {
    this.dropListeners.add(listener);
    return () => this.dropListeners.delete(listener);
  }

  private dropped(key: string): void {
    for (const listener of this.dropListeners) listener(key);
  }

  /** Drops expired tokens; they sit at the front because all share one lifetime. */
  prune(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > now) break;
      this.entries.delete(key);
    }
  }

  /** Ends every token of `userName` (removed or changed by a reload of the users). */
  revokeUser(userName: string): void {
    for (const [key, entry] of this.entries) if (entry.userName === userName) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
