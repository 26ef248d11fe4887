/**
 * Authentication of the REST API (docs/api.md): `/api/authenticate` trades a user name
 * and password for a bearer token; every other `/api` route needs one unless `--auth off`.
 * Holds the users, the token store and the failed-attempt limiter; start()/stop() own the
 * limiter's timer. Nothing here logs a password or a token.
 */
import { ApiError } from '../routes/api-error.ts';
import { Credentials, type UserSpec } from './credentials.ts';
import { LoginThrottle } from './login-throttle.ts';
import {
  type IssuedToken,
  isTokenShaped,
  TOKEN_LENGTH,
  type TokenSession,
  TokenStore,
} from './token-store.ts';

export interface AuthServiceOptions {
  users: readonly UserSpec[];
  /** false = `--auth off`: no token needed, authenticate accepts any credentials. */
  enabled: boolean;
  tokenTtlSeconds: number;
  /** Failures per remote address within `windowMs` before 429. */
  maxFailures: number;
  /** Failures per user name within `windowMs` before 429 (whatever the address). */
  userMaxFailures: number;
  windowMs: number;
  maxTokens?: number;
  maxAddresses?: number;
  now?: () => number;
}

/** `--auth-user-max-failures` of `serve` (its flag table holds the same default); other services use this. */
export const DEFAULT_AUTH_USER_MAX_FAILURES = 10;
/** Failed logins per address within the window, and the window: `serve`'s and the controller service's. */
export const DEFAULT_AUTH_MAX_FAILURES = 5;
export const DEFAULT_AUTH_WINDOW_MS = 60_000;
/** Bytes of body `/api/authenticate` reads (`--auth-body-limit`): a credential pair needs far less. */
export const DEFAULT_AUTH_BODY_LIMIT = 4096;

const WWW_AUTHENTICATE = { 'www-authenticate': 'Bearer' };

function unauthorized(message: string): ApiError {
  return new ApiError('UNAUTHORIZED', message, { headers: WWW_AUTHENTICATE });
}

const BEARER = 'Bearer ';

/**
 * The token of a `Bearer <token>` header value (`shaped`: it has the form of our tokens), or
 * throws UNAUTHORIZED for a malformed value. The usual value (`Bearer ` and a token of our form)
 * is taken apart without the header's regular expression, whose capture it equals (no white
 * space in such a token); anything else goes through the expression.
 */
function bearerToken(authorization: string): { token: string; shaped: boolean } {
  if (authorization.length === BEARER.length + TOKEN_LENGTH && authorization.startsWith(BEARER)) {
    const token = authorization.slice(BEARER.length);
    if (isTokenShaped(token)) return { token, shaped: true };
  }
  // RFC 7235: the scheme is case-insensitive.
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!match) throw unauthorized('Malformed Authorization header: expected "Bearer <token>"');
  return { token: match[1]!, shaped: false };
}

export class AuthService {
  readonly enabled: boolean;
  private credentials: Credentials;
  private readonly tokens: TokenStore;
  /** Failed logins per address and user name (login-throttle.ts, shared with the store broker). */
  private readonly throttle: LoginThrottle;

  constructor(options: AuthServiceOptions) {
    this.enabled = options.enabled;
    this.credentials = new Credentials(options.users);
    this.tokens = new TokenStore({
      ttlSeconds: options.tokenTtlSeconds,
      ...(options.maxTokens !== undefined && { maxTokens: options.maxTokens }),
      ...(options.now && { now: options.now }),
    });
    this.throttle = new LoginThrottle({
      maxFailures: options.maxFailures,
      userMaxFailures: options.userMaxFailures,
      windowMs: options.windowMs,
      ...(options.maxAddresses !== undefined && { maxAddresses: options.maxAddresses }),
      ...(options.now && { now: options.now }),
    });
  }

  /** A loggable stand-in for an attempted user name (LoginThrottle.digest): it may be a password. */
  userNameDigest(userName: string): string {
    return this.throttle.digest(userName);
  }

  get userCount(): number {
    return this.credentials.size;
  }

  start(): void {
    this.throttle.start();
  }

  stop(): void {
    this.throttle.stop();
    this.tokens.clear();
  }

  /**
   * Checks a caller's credentials; throws TOO_MANY_ATTEMPTS while the address or user name is
   * limited, INVALID_CREDENTIALS on a mismatch. A success clears the user name's failures only, so a
   * caller cannot interleave a valid login to guess another's password; the name's limit slows, never
   * locks (docs/decisions/login-lockout.md).
   */
  async authenticate(address: string, userName: string, password: string): Promise<IssuedToken> {
    if (!this.enabled) return this.tokens.issue(userName);
    const refused = this.throttle.refusal(address, userName);
    if (refused) {
      const what = refused.by === 'address' ? 'from this address' : 'for this user name';
      throw new ApiError(
        'TOO_MANY_ATTEMPTS',
        `Too many failed authentications ${what}; try again in ${refused.retryAfterSeconds} s`,
        { headers: { 'retry-after': String(refused.retryAfterSeconds) } },
      );
    }
    if (!(await this.credentials.verify(userName, password))) {
      this.throttle.failure(address, userName);
      // RFC 9110 section 15.5.2: every 401 names its scheme.
      throw new ApiError('INVALID_CREDENTIALS', 'Wrong user name or password', { headers: WWW_AUTHENTICATE });
    }
    this.throttle.success(address, userName);
    return this.tokens.issue(userName);
  }

  /**
   * check() plus the token's key and expiry, so a stream opened with it ends with it; with auth
   * off, a session of no user that never ends.
   */
  session(authorization: string | undefined): TokenSession {
    if (!this.enabled) return { key: '', userName: 'anonymous', expiresAt: Number.POSITIVE_INFINITY };
    this.check(authorization);
    const session = this.tokens.session(bearerToken(authorization!).token);
    if (!session) throw unauthorized('Unknown or expired bearer token: authenticate again');
    return session;
  }

  /** Whether the session `key` names is live (auth off: always). */
  isLive(key: string): boolean {
    return !this.enabled || this.tokens.isLive(key);
  }

  /**
   * `POST /api/logout`: the header's token is revoked at once; throws UNAUTHORIZED as check()
   * does when it is not a live token. Auth off: nothing to revoke.
   */
  logout(authorization: string | undefined): void {
    if (!this.enabled) return;
    this.check(authorization);
    this.tokens.revoke(bearerToken(authorization!).token);
  }

  /** `listener` hears the key of each token revoked or dropped before its time; returns the way off. */
  onSessionEnd(listener: (key: string) => void): () => void {
    return this.tokens.onDrop(listener);
  }

  /**
   * Replaces the users (a reload of the users file, docs/controller.md); the tokens of the users
   * named in `revoke` (removed or changed) stop working at once. Throws, changing nothing, for
   * a malformed hash.
   */
  replaceUsers(users: readonly UserSpec[], revoke: Iterable<string>): void {
    this.credentials = new Credentials(users);
    for (const name of revoke) this.tokens.revokeUser(name);
  }

  /**
   * A token for a user some other proof stands for (the controller's single sign-on, checked by
   * its identity provider): the same kind of token as authenticate() issues.
   */
  issueFor(userName: string): IssuedToken {
    return this.tokens.issue(userName);
  }

  /** Ends every token of `userName` at once. */
  revokeUser(userName: string): void {
    this.tokens.revokeUser(userName);
  }

  /** Whether `userName` is a configured user (for log lines; never for the answer). */
  knows(userName: string): boolean {
    return this.credentials.has(userName);
  }

  /**
   * The user behind an `Authorization` header value; throws UNAUTHORIZED (with
   * `WWW-Authenticate: Bearer`) for a missing, malformed, unknown or expired token. With auth
   * off it answers `undefined` whatever the header says.
   */
  check(authorization: string | undefined): string | undefined {
    if (!this.enabled) return undefined;
    if (authorization === undefined || authorization === '') {
      throw unauthorized('Missing bearer token: send "Authorization: Bearer <token>" from /api/authenticate');
    }
    const { token, shaped } = bearerToken(authorization);
    const user = shaped ? this.tokens.verifyShaped(token) : this.tokens.verify(token);
    if (user === undefined) throw unauthorized('Unknown or expired bearer token: authenticate again');
    return user;
  }
}
