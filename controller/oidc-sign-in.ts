/**
 * Single sign-on (docs/controller.md, "Single sign-on"): the OpenID Connect authorization code
 * flow with PKCE through openid-client. begin() answers the provider's address and keeps the
 * state, nonce and code verifier here, bound to a key the browser holds in a cookie; finish()
 * takes the provider's answer once and reads who signed in and the role claim. Nothing here
 * logs the client secret, a code or a token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import { hasControlCharacters } from '../src/control-characters.ts';
import { isRole, parseScope, type Role, type Scope } from './users.ts';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE alone). */
  clientSecret?: string | undefined;
  /** Claim whose value is the role (a string, or a list: its first role name counts). */
  roleClaim: string;
  /** Claim whose value is an operator's scope (`group=G1,G2` or `store=S1`). */
  scopeClaim: string;
  /** Space-separated scopes asked for. */
  scopes: string;
  /** The callback as the provider knows it; absent: from the request's own address. */
  redirectUrl?: string | undefined;
  /** The sign-in button's text after "Sign in with"; default the issuer's host. */
  name?: string | undefined;
}

export interface OidcLimits {
  /** Sign-ins begun and not finished kept at most (the oldest is dropped first). */
  maxPending: number;
  /** How long the provider's round trip may take. */
  pendingMs: number;
  /** Of those, begun from one address: past it that address is refused, not the others dropped. */
  maxPendingPerAddress: number;
}

export const DEFAULT_OIDC_LIMITS: OidcLimits = {
  maxPending: 1000,
  pendingMs: 10 * 60_000,
  maxPendingPerAddress: 20,
};

/** A sign-in that the provider confirmed. */
export interface SignedIn {
  /** `oidc:` and the preferred_username, email or subject: never the name of a password user. */
  userName: string;
  subject: string;
  role: Role;
  scope?: Scope | undefined;
  /** Why the role is not the claim's value (missing, unknown, a bad scope); for the audit. */
  note?: string | undefined;
}

/** A sign-in refused: `code` is OIDC_FAILED (the answer or the browser) or OIDC_UNAVAILABLE. */
export class OidcError extends Error {
  override readonly name = 'OidcError';
  constructor(
    readonly code: 'OIDC_FAILED' | 'OIDC_UNAVAILABLE',
    message: string,
  ) {
    super(message);
  }
}

interface Pending {
  address: string;
  browserKeyHash: Buffer;
  verifier: string;
  nonce: string;
  redirectUri: string;
  expiresAt: number;
}

const hash = (text: string): Buffer => createHash('sha256').update(text).digest();

/** A user name in the same characters a users file allows, without control characters. */
function cleanName(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > 255) return undefined;
  return hasControlCharacters(value) ? undefined : value;
}

/** The role a claim's value names: a string, or the first role name in a list. */
export function roleOfClaim(value: unknown): Role | undefined {
  const values = Array.isArray(value) ? value : [value];
  return values.find((v): v is Role => typeof v === 'string' && isRole(v));
}

/** Loopback issuers (a provider on the same machine, tests) may speak plain HTTP. */
function loopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

export class OidcSignIn {
  readonly #settings: OidcSettings;
  readonly #limits: OidcLimits;
  readonly #now: () => number;
  readonly #pending = new Map<string, Pending>();
  /** Sign-ins in #pending per address they were begun from. */
  readonly #perAddress = new Map<string, number>();
  #config: Promise<client.Configuration> | undefined;

  constructor(settings: OidcSettings, limits: Partial<OidcLimits> = {}, now: () => number = Date.now) {
    this.#settings = settings;
    this.#limits = { ...DEFAULT_OIDC_LIMITS, ...limits };
    this.#now = now;
  }

  /** The button's text after "Sign in with". */
  get displayName(): string {
    return this.#settings.name ?? new URL(this.#settings.issuer).host;
  }

  get fixedRedirectUrl(): string | undefined {
    return this.#settings.redirectUrl;
  }

  /** The provider's metadata, fetched at the first sign-in and kept; a failure is tried again next time. */
  #configuration(): Promise<client.Configuration> {
    if (!this.#config) {
      const issuer = new URL(this.#settings.issuer);
      const insecure = issuer.protocol === 'http:' && loopback(issuer);
      this.#config = client
        .discovery(issuer, this.#settings.clientId, this.#settings.clientSecret, undefined, {
          timeout: 10,
          ...(insecure && { execute: [client.allowInsecureRequests] }),
        })
        .catch((error: unknown) => {
          this.#config = undefined;
          throw new OidcError(
            'OIDC_UNAVAILABLE',
            `the provider ${issuer.host} cannot be reached or described itself wrongly: ${(error as Error).message}`,
          );
        });
    }
    return this.#config;
  }

  #drop(state: string): void {
    const pending = this.#pending.get(state);
    if (!pending) return;
    this.#pending.delete(state);
    const left = (this.#perAddress.get(pending.address) ?? 1) - 1;
    if (left > 0) this.#perAddress.set(pending.address, left);
    else this.#perAddress.delete(pending.address);
  }

  /**
   * Starts a sign-in from `address`: the provider's address to send the browser to, and the key
   * its cookie keeps.
   */
  async begin(redirectUri: string, address: string): Promise<{ url: URL; browserKey: string }> {
    const config = await this.#configuration();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const browserKey = randomBytes(32).toString('base64url');
    const now = this.#now();
    for (const [key, pending] of this.#pending) {
      if (pending.expiresAt > now && this.#pending.size < this.#limits.maxPending) break;
      this.#drop(key);
    }
    const begun = this.#perAddress.get(address) ?? 0;
    if (begun >= this.#limits.maxPendingPerAddress)
      throw new OidcError('OIDC_FAILED', 'too many sign-ins in progress from this address');
    this.#perAddress.set(address, begun + 1);
    this.#pending.set(state, {
      address,
      browserKeyHash: hash(browserKey),
      verifier,
      nonce,
      redirectUri,
      expiresAt: now + this.#limits.pendingMs,
    });
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.#settings.scopes,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, browserKey };
  }

  /**
   * The provider's answer at the callback (`callbackUrl`: the full URL with its query): the state
   * is used up here, so a replayed answer is refused; the browser must hold the key begin() gave.
   */
  async finish(callbackUrl: URL, browserKey: string | undefined): Promise<SignedIn> {
    const state = callbackUrl.searchParams.get('state') ?? '';
    const pending = this.#pending.get(state);
    this.#drop(state);
    if (!pending || pending.expiresAt <= this.#now())
      throw new OidcError('OIDC_FAILED', 'unknown, used or expired sign-in state');
    const presented = hash(browserKey ?? '');
    if (!timingSafeEqual(presented, pending.browserKeyHash))
      throw new OidcError('OIDC_FAILED', 'the sign-in was begun in another browser');
    const config = await this.#configuration();
    // The provider's answer arrives at the callback as the provider knows it (behind a proxy too).
    const current = new URL(pending.redirectUri);
    current.search = callbackUrl.search;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      throw new OidcError('OIDC_FAILED', `the provider's answer was refused: ${(error as Error).message}`);
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new OidcError('OIDC_FAILED', 'the provider sent no ID token');
    let claims: Record<string, unknown> = { ...idClaims };
    if (!(this.#settings.roleClaim in claims) || cleanName(claims.preferred_username) === undefined) {
      // Many providers put profile and custom claims at the userinfo endpoint only (OIDC Core 5.4).
      try {
        const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
        claims = { ...info, ...claims };
      } catch {
        // Without userinfo the ID token's claims are all there is: a missing role is viewer.
      }
    }
    return this.#signedIn(idClaims.sub, claims);
  }

  #signedIn(subject: string, claims: Record<string, unknown>): SignedIn {
    const shown = cleanName(claims.preferred_username) ?? cleanName(claims.email) ?? cleanName(subject);
    if (shown === undefined) throw new OidcError('OIDC_FAILED', 'the ID token names no usable subject');
    const userName = `oidc:${shown}`;
    const claimed = claims[this.#settings.roleClaim];
    const role = roleOfClaim(claimed);
    if (role === undefined) {
      const note =
        claimed === undefined
          ? `no ${this.#settings.roleClaim} claim: viewer`
          : `${this.#settings.roleClaim} names no role: viewer`;
      return { userName, subject, role: 'viewer', note };
    }
    const scopeValue = claims[this.#settings.scopeClaim];
    if (role !== 'operator' || scopeValue === undefined) return { userName, subject, role };
    const scope = typeof scopeValue === 'string' ? parseScope(scopeValue) : undefined;
    // A scope that cannot be read must not widen an operator to every register: viewer instead.
    if (scope === undefined || typeof scope === 'string')
      return { userName, subject, role: 'viewer', note: `${this.#settings.scopeClaim} unreadable: viewer` };
    return { userName, subject, role, scope };
  }
}
