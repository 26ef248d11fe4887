/**
 * Single sign-on's bounded state (controller/service/oidc-sessions.ts) on a clock the test moves:
 * hand-over codes used once, briefly, by their own browser; the roles of signed-in users expiring
 * with their tokens; and the `--oidc-*` flags validated with the rest of the configuration.
 */
import { describe, expect, it } from 'vitest';
import { controllerConfigSchema, controllerCrossProblems } from '../../cli/controller-config.ts';
import { roleOfClaim } from '../../controller/oidc-sign-in.ts';
import { Handovers, OidcUsers } from '../../controller/service/oidc-sessions.ts';
import { ConfigError, parseConfig } from '../../src/config.ts';

const TOKEN = { token: 't'.repeat(43), tokenType: 'Bearer' as const, expiresIn: 3600 };

describe('hand-over codes', () => {
  it('are taken once, by the browser that signed in, within their lifetime', () => {
    let now = 1_000_000;
    const handovers = new Handovers(60_000, 3, () => now);
    const code = handovers.add({ token: TOKEN, user: 'oidc:a', role: 'viewer' }, 'browser-a');
    expect(code).toMatch(/^[\w-]{43}$/);
    expect(handovers.take(code, 'browser-a')).toEqual({ token: TOKEN, user: 'oidc:a', role: 'viewer' });
    expect(handovers.take(code, 'browser-a')).toBeUndefined();
    const other = handovers.add({ token: TOKEN, user: 'oidc:a', role: 'viewer' }, 'browser-a');
    expect(handovers.take(other, 'browser-b')).toBeUndefined();
    expect(handovers.take(other, 'browser-a')).toBeUndefined();
    const late = handovers.add({ token: TOKEN, user: 'oidc:a', role: 'viewer' }, 'browser-a');
    now += 60_000;
    expect(handovers.take(late, 'browser-a')).toBeUndefined();
  });

  it('are bounded: beyond the cap the oldest is dropped', () => {
    const handovers = new Handovers(60_000, 3, () => 0);
    const codes = [1, 2, 3, 4].map((n) =>
      handovers.add({ token: TOKEN, user: `oidc:${n}`, role: 'viewer' }, 'b'),
    );
    expect(handovers.take(codes[0]!, 'b')).toBeUndefined();
    for (const code of codes.slice(1)) expect(handovers.take(code, 'b')).toBeDefined();
  });
});

describe('signed-in users', () => {
  it('keep their role as long as a token lives; another subject under the name is reported', () => {
    let now = 0;
    const users = new OidcUsers(3_600_000, 10, () => now);
    expect(
      users.signedIn({
        userName: 'oidc:a',
        subject: 's1',
        role: 'operator',
        scope: { kind: 'group', values: ['front'] },
      }),
    ).toBe(false);
    expect(users.get('oidc:a')).toEqual({ role: 'operator', scope: { kind: 'group', values: ['front'] } });
    expect(users.signedIn({ userName: 'oidc:a', subject: 's1', role: 'approver' })).toBe(false);
    expect(users.get('oidc:a')).toEqual({ role: 'approver' });
    expect(users.signedIn({ userName: 'oidc:a', subject: 's2', role: 'viewer' })).toBe(true);
    now += 3_600_000;
    expect(users.get('oidc:a')).toBeUndefined();
    expect(users.get('admin')).toBeUndefined();
  });

  it('are bounded: beyond the cap the oldest is forgotten (its calls are then refused)', () => {
    const users = new OidcUsers(3_600_000, 2, () => 0);
    for (const name of ['oidc:a', 'oidc:b', 'oidc:c'])
      users.signedIn({ userName: name, subject: name, role: 'admin' });
    expect(users.get('oidc:a')).toBeUndefined();
    expect(users.get('oidc:c')).toEqual({ role: 'admin' });
  });
});

it('a role claim is a role name, or a list whose first role name counts', () => {
  expect(roleOfClaim('author')).toBe('author');
  expect(roleOfClaim(['staff', 'operator', 'admin'])).toBe('operator');
  for (const value of [undefined, 'Admin', 'superuser', 7, ['staff'], { role: 'admin' }])
    expect(roleOfClaim(value), JSON.stringify(value)).toBeUndefined();
});

describe('flags', () => {
  const parse = (input: Record<string, unknown>) =>
    parseConfig(controllerConfigSchema, input, controllerCrossProblems(input));

  it('an issuer needs a client id; the other --oidc flags need an issuer; the secret is never echoed', () => {
    const base = { mqttUrl: 'mqtt://127.0.0.1:1883', users: ['admin:admin-pw'] };
    expect(() => parse({ ...base, oidcIssuer: 'https://idp.example.com/realms/shop' })).toThrow(
      /--oidc-client-id: required with --oidc-issuer/,
    );
    let error: unknown;
    try {
      parse({
        ...base,
        oidcClientSecret: 'very-secret-value',
        oidcScopes: 'profile email',
        oidcIssuer: 'ftp://x',
        oidcRedirectUrl: 'https://shop.example.com/controller/api/oidc/callback',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/--oidc-issuer.*http\(s\):\/\/ URL/);
    expect(message).toMatch(/--oidc-scopes.*must include openid/);
    expect(message).toContain('--oidc-redirect-url: must be https://HOST/api/oidc/callback (no path prefix)');
    expect(message).not.toContain('very-secret-value');
    const config = parse({
      ...base,
      oidcIssuer: 'https://idp.example.com/realms/shop',
      oidcClientId: 'regbridge',
      oidcClientSecret: 's3cret',
    });
    expect(config).toMatchObject({
      oidcRoleClaim: 'regbridge_role',
      oidcScopeClaim: 'regbridge_scope',
      oidcScopes: 'openid profile email',
    });
  });
});
