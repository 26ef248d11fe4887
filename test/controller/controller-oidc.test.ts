/**
 * Single sign-on of the controller service (docs/controller.md, "Single sign-on") against a real
 * OpenID Connect provider (oidc-provider on a free port) over real HTTP: the authorization code
 * flow with PKCE driven through the provider's own login and consent pages, the role from the
 * claim (missing or unknown: viewer), an operator's scope from its claim, the hand-over to a
 * normal bearer token, and what is refused: a bad state, a replayed callback, another browser,
 * a used hand-over code, a provider that cannot be reached, sign-on while it is off.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { type OidcSettings, OidcSignIn } from '../../controller/oidc-sign-in.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { login, startService } from '../support/controller-service.ts';
import {
  browse,
  CookieJar,
  controllerCallback,
  OIDC_CLIENT,
  ROLE_CLAIM,
  type RunningProvider,
  SCOPE_CLAIM,
  type SignedInSession,
  signInAtProvider,
  signInThrough,
  startProvider,
} from '../support/oidc-provider.ts';
import { freePort } from '../support/ports.ts';

const ns = `stores/oidc${randomUUID().slice(0, 6)}`;
const ACCOUNTS: Record<string, Record<string, unknown>> = {
  alice: { [ROLE_CLAIM]: 'approver', email: 'alice@example.com' },
  bob: {},
  carol: { [ROLE_CLAIM]: 'superuser' },
  dave: { [ROLE_CLAIM]: ['store-staff', 'operator'], [SCOPE_CLAIM]: 'group=front' },
  erin: { [ROLE_CLAIM]: 'operator', [SCOPE_CLAIM]: 'front' },
  // Another account of the provider whose preferred_username is alice's.
  'alice-2': { preferred_username: 'alice' },
};
let broker: RunningBroker;
let provider: RunningProvider;
let service: RunningControllerService;
let base: string;
let adminToken: string;

function settings(issuer: string): OidcSettings {
  return {
    issuer,
    clientId: OIDC_CLIENT.id,
    clientSecret: OIDC_CLIENT.secret,
    roleClaim: ROLE_CLAIM,
    scopeClaim: SCOPE_CLAIM,
    scopes: 'openid profile email',
  };
}

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies, checked by each expectation
  body: any;
}

async function http(
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  at = base,
): Promise<Reply> {
  const response = await fetch(`${at}${path}`, {
    method,
    headers: {
      ...headers,
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

/** Begins at the controller; answers the provider's authorization URL (the jar holds the controller's cookie). */
async function begin(jar: CookieJar): Promise<URL> {
  const started = await browse(jar, `${base}/api/oidc/login`);
  expect(started.status).toBe(303);
  return new URL(started.location!);
}

/** The callback's answer, which always lands on the dashboard. */
async function callback(jar: CookieJar, url: string): Promise<{ code?: string; error?: string }> {
  const { landing, ...answer } = await controllerCallback(jar, url);
  expect(landing).toBe(`${base}/`);
  return answer;
}

const signIn = (account: string): Promise<SignedInSession> => signInThrough(base, account);

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  const providerPort = await freePort();
  service = await startService(broker, ns, {
    settings: { oidc: settings(`http://127.0.0.1:${providerPort}`) },
  });
  base = `http://127.0.0.1:${service.httpPort}`;
  provider = await startProvider(providerPort, `${base}/api/oidc/callback`, ACCOUNTS);
  adminToken = await login(service.app);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await provider?.stop();
  await broker?.stop();
});

describe('the sign-in round trip', () => {
  it('GET /api/oidc tells the dashboard it is on and what the button says', async () => {
    const reply = await http(undefined, 'GET', '/api/oidc');
    expect(reply).toEqual({
      status: 200,
      body: { enabled: true, name: new URL(provider.issuer).host, loginUrl: '/api/oidc/login' },
    });
  });

  it('OpenAPI describes the routes, which need no token and have no 403', async () => {
    const { body } = await http(undefined, 'GET', '/openapi.json');
    for (const path of ['/api/oidc', '/api/oidc/login', '/api/oidc/callback', '/api/oidc/session'])
      expect(Object.keys(body.paths), path).toContain(path);
    expect(Object.keys(body.paths['/api/oidc/login'].get.responses).sort()).toEqual(['303', '404']);
    expect(body.paths['/api/oidc/session'].post.security).toBeUndefined();
  });

  it('login sends the browser to the provider with PKCE, state and nonce, bound by an HttpOnly cookie', async () => {
    const response = await fetch(`${base}/api/oidc/login`, { redirect: 'manual' });
    expect(response.status).toBe(303);
    const url = new URL(response.headers.get('location')!);
    expect(url.origin).toBe(provider.issuer);
    expect(url.searchParams.get('client_id')).toBe(OIDC_CLIENT.id);
    expect(url.searchParams.get('redirect_uri')).toBe(`${base}/api/oidc/callback`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toMatch(/^[\w-]{20,}$/);
    expect(url.searchParams.get('nonce')).toMatch(/^[\w-]{20,}$/);
    expect(url.searchParams.get('scope')).toBe('openid profile email');
    const [cookie] = response.headers.getSetCookie();
    expect(cookie).toMatch(
      /^regbridge_sso=[\w-]{43}; Path=\/api\/oidc; HttpOnly; SameSite=Lax; Max-Age=600$/,
    );
  });

  it('the role comes from the claim: an approver, whose token works like a password login', async () => {
    const session = await signIn('alice');
    expect(session).toMatchObject({
      tokenType: 'Bearer',
      expiresIn: 3600,
      user: 'oidc:alice',
      role: 'approver',
    });
    expect((await http(session.token, 'GET', '/api/me')).body).toEqual({
      user: 'oidc:alice',
      role: 'approver',
    });
    expect((await http(session.token, 'GET', '/api/jobs')).status).toBe(200);
    const refused = await http(session.token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { group: 'front' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('FORBIDDEN');
    const audit = await http(adminToken, 'GET', '/api/audit?limit=5');
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({
        user: 'oidc:alice',
        address: '127.0.0.1',
        action: 'login',
        detail: 'token issued (single sign-on, role approver)',
      }),
    );
  });

  it('another provider account under the same name ends the earlier tokens and never shares the role', async () => {
    const alice = await signIn('alice');
    const impostor = await signIn('alice-2');
    expect(impostor).toMatchObject({ user: 'oidc:alice', role: 'viewer' });
    expect((await http(alice.token, 'GET', '/api/me')).status).toBe(401);
    expect((await http(impostor.token, 'GET', '/api/me')).body).toEqual({
      user: 'oidc:alice',
      role: 'viewer',
    });
    // Alice again: the impostor's token ends, hers has her role.
    const back = await signIn('alice');
    expect((await http(impostor.token, 'GET', '/api/me')).status).toBe(401);
    expect((await http(back.token, 'GET', '/api/me')).body).toEqual({ user: 'oidc:alice', role: 'approver' });
  });

  it('logout revokes the signed-in token', async () => {
    const { token } = await signIn('alice');
    expect((await http(token, 'POST', '/api/logout')).status).toBe(204);
    const after = await http(token, 'GET', '/api/me');
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('UNAUTHORIZED');
  });

  it('a missing or unknown role claim is viewer, noted in the audit', async () => {
    const bob = await signIn('bob');
    expect((await http(bob.token, 'GET', '/api/me')).body).toEqual({ user: 'oidc:bob', role: 'viewer' });
    const carol = await signIn('carol');
    expect((await http(carol.token, 'GET', '/api/me')).body).toEqual({ user: 'oidc:carol', role: 'viewer' });
    expect((await http(carol.token, 'POST', '/api/scripts', { name: 'x', body: 'PRINT x' })).status).toBe(
      403,
    );
    const audit = await http(adminToken, 'GET', '/api/audit?limit=10');
    const details = audit.body.entries.map((e: { user: string; detail: string }) => `${e.user}: ${e.detail}`);
    expect(details).toContain(
      `oidc:bob: token issued (single sign-on, role viewer; no ${ROLE_CLAIM} claim: viewer)`,
    );
    expect(details).toContain(
      `oidc:carol: token issued (single sign-on, role viewer; ${ROLE_CLAIM} names no role: viewer)`,
    );
  });

  it("a list claim's first role counts; an operator's scope comes from its claim, an unreadable one is viewer", async () => {
    const dave = await signIn('dave');
    expect((await http(dave.token, 'GET', '/api/me')).body).toEqual({
      user: 'oidc:dave',
      role: 'operator',
      scope: 'group=front',
    });
    // A register the controller has not seen is outside every scope.
    const outside = await http(dave.token, 'POST', '/api/jobs', {
      script: 'PRINT x',
      target: { devices: ['reg9'], allowUnknown: true },
    });
    expect(outside.status, JSON.stringify(outside.body)).toBe(403);
    expect(outside.body.code).toBe('OUT_OF_SCOPE');
    const erin = await signIn('erin');
    expect(erin.role).toBe('viewer');
  });
});

describe('what is refused', () => {
  async function lastAudit(): Promise<{ user: string; action: string; detail: string }> {
    return (await http(adminToken, 'GET', '/api/audit?limit=1')).body.entries[0];
  }

  it('a state the controller did not give: OIDC_FAILED, audited', async () => {
    const jar = new CookieJar();
    const authorize = await begin(jar);
    authorize.searchParams.set('state', 'forged-state-forged-state');
    const answer = await signInAtProvider(jar, authorize.href, 'alice');
    expect(new URL(answer).searchParams.get('state')).toBe('forged-state-forged-state');
    expect(await callback(jar, answer)).toEqual({ error: 'OIDC_FAILED' });
    expect(await lastAudit()).toMatchObject({
      user: 'oidc',
      action: 'login_failed',
      detail: 'OIDC_FAILED (single sign-on: unknown, used or expired sign-in state)',
    });
  });

  it('a replayed callback: the second is refused, the first code still hands over once', async () => {
    const jar = new CookieJar();
    const answer = await signInAtProvider(jar, (await begin(jar)).href, 'alice');
    const first = await callback(jar, answer);
    expect(first.code).toMatch(/^[\w-]{43}$/);
    expect(await callback(jar, answer)).toEqual({ error: 'OIDC_FAILED' });
    const cookie = { cookie: jar.header(base) };
    expect((await http(undefined, 'POST', '/api/oidc/session', { code: first.code }, cookie)).status).toBe(
      200,
    );
    const again = await http(undefined, 'POST', '/api/oidc/session', { code: first.code }, cookie);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ statusCode: 400, code: 'OIDC_FAILED' });
  });

  it("another browser's callback or hand-over code is refused", async () => {
    const jar = new CookieJar();
    const answer = await signInAtProvider(jar, (await begin(jar)).href, 'alice');
    expect(await callback(new CookieJar(), answer)).toEqual({ error: 'OIDC_FAILED' });
    // Audited too, but within a minute of the refusal above as one count (docs/controller.md, "Audit trail").

    const jar2 = new CookieJar();
    const { code } = await callback(jar2, await signInAtProvider(jar2, (await begin(jar2)).href, 'alice'));
    const stolen = await http(undefined, 'POST', '/api/oidc/session', { code });
    expect(stolen.status).toBe(400);
    expect(stolen.body.code).toBe('OIDC_FAILED');
    // Refused once, the code is gone for its own browser too.
    const late = await http(undefined, 'POST', '/api/oidc/session', { code }, { cookie: jar2.header(base) });
    expect(late.status).toBe(400);
  });

  it("the provider's own refusal comes back as OIDC_FAILED", async () => {
    const jar = new CookieJar();
    const authorize = await begin(jar);
    const state = authorize.searchParams.get('state')!;
    const denied = `${base}/api/oidc/callback?error=access_denied&state=${state}`;
    expect(await callback(jar, denied)).toEqual({ error: 'OIDC_FAILED' });
  });
});

describe('sign-ins in progress', () => {
  it('are bounded per address: one address past its cap is refused, others still begin', async () => {
    const sso = new OidcSignIn(settings(provider.issuer), { maxPendingPerAddress: 2 });
    const redirect = `${base}/api/oidc/callback`;
    await sso.begin(redirect, '192.0.2.1');
    await sso.begin(redirect, '192.0.2.1');
    await expect(sso.begin(redirect, '192.0.2.1')).rejects.toMatchObject({
      code: 'OIDC_FAILED',
      message: 'too many sign-ins in progress from this address',
    });
    const other = await sso.begin(redirect, '192.0.2.2');
    expect(other.url.searchParams.get('code_challenge_method')).toBe('S256');
  });
});

describe('behind a reverse proxy', () => {
  it('--oidc-redirect-url is the callback the provider gets, the dashboard is beside it, the cookie Secure', async () => {
    const redirectUrl = 'https://store-12.example.com/api/oidc/callback';
    const proxied = await startService(broker, ns, {
      settings: { oidc: { ...settings(provider.issuer), redirectUrl } },
    });
    try {
      const at = `http://127.0.0.1:${proxied.httpPort}`;
      const login = await fetch(`${at}/api/oidc/login`, { redirect: 'manual' });
      expect(new URL(login.headers.get('location')!).searchParams.get('redirect_uri')).toBe(redirectUrl);
      expect(login.headers.getSetCookie()[0]).toMatch(/; Secure$/);
      const refused = await fetch(`${at}/api/oidc/callback?state=unknown&code=x`, { redirect: 'manual' });
      expect(refused.headers.get('location')).toBe('https://store-12.example.com/#oidc-error=OIDC_FAILED');
    } finally {
      await proxied.stop();
    }
  });
});

describe('a Host header no address can be made of', () => {
  it('still lands on the dashboard of this host, with the refusal', async () => {
    const { request } = await import('node:http');
    const location = await new Promise<string | undefined>((resolve, reject) => {
      const asked = request(
        {
          host: '127.0.0.1',
          port: service.httpPort,
          path: '/api/oidc/callback?state=x&code=y',
          headers: { host: 'a b' },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode === 303 ? response.headers.location : `status ${response.statusCode}`);
        },
      );
      asked.on('error', reject);
      asked.end();
    });
    expect(location).toBe('/#oidc-error=OIDC_FAILED');
  });
});

describe('without a provider', () => {
  it('off: GET /api/oidc says so and the other routes answer OIDC_NOT_CONFIGURED', async () => {
    const off = await startService(broker, ns);
    try {
      const at = `http://127.0.0.1:${off.httpPort}`;
      expect(await http(undefined, 'GET', '/api/oidc', undefined, {}, at)).toEqual({
        status: 200,
        body: { enabled: false },
      });
      for (const [method, path] of [
        ['GET', '/api/oidc/login'],
        ['GET', '/api/oidc/callback?code=x&state=y'],
        ['POST', '/api/oidc/session'],
      ] as const) {
        const reply = await http(
          undefined,
          method,
          path,
          method === 'POST' ? { code: 'x' } : undefined,
          {},
          at,
        );
        expect(reply.status, path).toBe(404);
        expect(reply.body.code, path).toBe('OIDC_NOT_CONFIGURED');
      }
    } finally {
      await off.stop();
    }
  });

  it('a provider that cannot be reached: back to the dashboard with OIDC_UNAVAILABLE', async () => {
    const nobody = await freePort();
    const down = await startService(broker, ns, {
      settings: { oidc: settings(`http://127.0.0.1:${nobody}`) },
    });
    try {
      const at = `http://127.0.0.1:${down.httpPort}`;
      const response = await fetch(`${at}/api/oidc/login`, { redirect: 'manual' });
      expect(response.status).toBe(303);
      expect(response.headers.get('location')).toBe(`${at}/#oidc-error=OIDC_UNAVAILABLE`);
      expect(response.headers.getSetCookie()).toEqual([]);
    } finally {
      await down.stop();
    }
  });
});
