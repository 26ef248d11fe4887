/**
 * `regbridge controller`'s single sign-on flags (docs/controller.md, "Single sign-on"), declared
 * once: an OpenID Connect provider, the client registered there, and the claims that carry the
 * role and an operator's scope. The client secret is a flag or REGBRIDGE_OIDC_CLIENT_SECRET
 * (scrubbed from the environment once read, as passwords are); no message echoes it.
 */
import * as z from 'zod';
import type { OidcSettings } from '../controller/oidc-sign-in.ts';
import { flag } from './flags.ts';

const httpUrl = (what: string) =>
  z.string().refine(
    (text) => {
      try {
        const url = new URL(text);
        return (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '';
      } catch {
        return false;
      }
    },
    { message: `must be ${what}: an http(s):// URL without #fragment` },
  );

const claimName = z.string().regex(/^[\w.:/-]{1,200}$/, 'must be a claim name (letters, digits, _ . : / -)');

export const oidcFlags = {
  oidcIssuer: flag(
    '--oidc-issuer <url>',
    'single sign-on: the OpenID Connect issuer (its /.well-known/openid-configuration is read); plain http only on loopback',
    httpUrl('the issuer'),
    { defaultHelp: 'off' },
  ),
  oidcClientId: flag(
    '--oidc-client-id <id>',
    'the client id registered at the issuer',
    z.string().min(1).max(500),
  ),
  oidcClientSecret: flag(
    '--oidc-client-secret <secret>',
    'the client secret (sent as client_secret_post); better REGBRIDGE_OIDC_CLIENT_SECRET; none: a public client with PKCE only',
    z.string().min(1, 'must not be empty').max(2000),
  ),
  oidcRoleClaim: flag(
    '--oidc-role-claim <name>',
    'the ID token or userinfo claim whose value is the role (a list: its first role); missing or unknown: viewer',
    claimName,
    { default: 'regbridge_role' },
  ),
  oidcScopeClaim: flag(
    '--oidc-scope-claim <name>',
    "the claim whose value is an operator's scope (group=G1,G2 or store=S1); unreadable: viewer",
    claimName,
    { default: 'regbridge_scope' },
  ),
  oidcScopes: flag(
    '--oidc-scopes <list>',
    'scopes asked of the issuer, space-separated (openid is required)',
    z
      .string()
      .regex(
        /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/,
        'must be scope names separated by spaces',
      )
      .refine((text) => text.split(' ').includes('openid'), { message: 'must include openid' }),
    { default: 'openid profile email' },
  ),
  oidcRedirectUrl: flag(
    '--oidc-redirect-url <url>',
    'the callback as registered at the issuer (https://HOST/api/oidc/callback) when the address browsers use differs from this service (a proxy); without it, the address the browser used',
    // The sign-in cookie's path and the dashboard's own addresses are absolute: no path prefix.
    httpUrl('the callback URL').refine((text) => new URL(text).pathname === '/api/oidc/callback', {
      message: 'must be https://HOST/api/oidc/callback (no path prefix)',
    }),
  ),
  oidcName: flag(
    '--oidc-name <text>',
    'the sign-in button says "Sign in with <text>"; without it, the issuer\'s host',
    z.string().min(1).max(100),
  ),
};

/** The flags' values as a config holds them. */
export interface OidcFlagValues {
  oidcIssuer?: string | undefined;
  oidcClientId?: string | undefined;
  oidcClientSecret?: string | undefined;
  oidcRoleClaim: string;
  oidcScopeClaim: string;
  oidcScopes: string;
  oidcRedirectUrl?: string | undefined;
  oidcName?: string | undefined;
}

/** Checks across the flags, on the raw input. */
export function oidcProblems(input: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const issuer = input.oidcIssuer !== undefined;
  if (issuer && input.oidcClientId === undefined)
    problems.push('--oidc-client-id: required with --oidc-issuer (the client registered there)');
  if (!issuer) {
    for (const key of ['oidcClientId', 'oidcClientSecret', 'oidcRedirectUrl', 'oidcName'] as const) {
      if (input[key] !== undefined)
        problems.push(`--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: only with --oidc-issuer`);
    }
  }
  return problems;
}

/** The single sign-on settings, or undefined when no issuer is given. */
export function oidcSettingsOf(values: OidcFlagValues): OidcSettings | undefined {
  if (values.oidcIssuer === undefined || values.oidcClientId === undefined) return undefined;
  return {
    issuer: values.oidcIssuer,
    clientId: values.oidcClientId,
    clientSecret: values.oidcClientSecret,
    roleClaim: values.oidcRoleClaim,
    scopeClaim: values.oidcScopeClaim,
    scopes: values.oidcScopes,
    redirectUrl: values.oidcRedirectUrl,
    name: values.oidcName,
  };
}
