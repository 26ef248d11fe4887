/**
 * A real OpenID Connect provider for the single sign-on suites: `oidc-provider` on a free port
 * of 127.0.0.1, one confidential client whose redirect URI is the controller's callback, PKCE
 * required, the dev interactions' login page (any login, any password: the login names the
 * account) and accounts whose claims the test chooses. Also a fetch-driven browser that goes
 * through the provider's pages as a person would, cookies included.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export const OIDC_CLIENT = { id: 'regbridge-controller', secret: 'client-secret-for-tests-only' };
export const ROLE_CLAIM = 'regbridge_role';
export const SCOPE_CLAIM = 'regbridge_scope';

export interface RunningProvider {
  readonly issuer: string;
  stop(): Promise<void>;
}

/** oidc-provider's notices about its development defaults (keys, in-memory store, login page). */
function quietNotices(): () => void {
  const { info, warn } = console;
  const notice = (args: unknown[]): boolean =>
    typeof args[0] === 'string' && args[0].startsWith('oidc-provider ');
  console.info = (...args: unknown[]) => (notice(args) ? undefined : info(...args));
  console.warn = (...args: unknown[]) => (notice(args) ? undefined : warn(...args));
  return () => {
    console.info = info;
    console.warn = warn;
  };
}

/**
 * Starts the provider on `port` (the controller's issuer URL must be known before: a port from
 * freePort()) for the client whose callback is `redirectUri`. `accounts`: login -> claims.
 */
export async function startProvider(
  port: number,
  redirectUri: string,
  accounts: Record<string, Record<string, unknown>>,
  clientSecret = OIDC_CLIENT.secret,
): Promise<RunningProvider> {
  const issuer = `http://127.0.0.1:${port}`;
  const restore = quietNotices();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: OIDC_CLIENT.id,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    pkce: { required: () => true },
    cookies: { keys: ['cookie-key-for-tests-only-0123456789'] },
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', ROLE_CLAIM, SCOPE_CLAIM],
      email: ['email'],
    },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, preferred_username: id, ...accounts[id] }),
    }),
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  if (actual !== port) throw new Error(`provider on ${actual}, not ${port}`);
  return {
    issuer,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      restore();
    },
  };
}

/** Cookies per origin, as a browser keeps them (paths and expiry are not needed here). */
export class CookieJar {
  readonly #jars = new Map<string, Map<string, string>>();

  header(url: string): string {
    const jar = this.#jars.get(new URL(url).host);
    return jar ? [...jar].map(([name, value]) => `${name}=${value}`).join('; ') : '';
  }

  keep(url: string, response: Response): void {
    const host = new URL(url).host;
    const jar = this.#jars.get(host) ?? new Map<string, string>();
    this.#jars.set(host, jar);
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1)];
      if (value === '' || /max-age=0\b/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
  }
}

/** A GET or form POST without following redirects, cookies sent and kept. */
export async function browse(
  jar: CookieJar,
  url: string,
  form?: Record<string, string>,
): Promise<{ status: number; location: string | undefined; text: string }> {
  const cookie = jar.header(url);
  const response = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: {
      ...(cookie && { cookie }),
      ...(form && { 'content-type': 'application/x-www-form-urlencoded' }),
    },
    ...(form && { body: new URLSearchParams(form).toString() }),
  });
  jar.keep(url, response);
  const location = response.headers.get('location') ?? undefined;
  return {
    status: response.status,
    location: location && new URL(location, url).href,
    text: await response.text(),
  };
}

/**
 * Follows the provider's pages from `start` (its authorization URL) as a person would: the
 * login form (login names the account), then the consent form; stops at the first redirect that
 * leaves the provider and answers it (the controller's callback URL with code and state).
 */
export async function signInAtProvider(jar: CookieJar, start: string, login: string): Promise<string> {
  const provider = new URL(start).origin;
  let url = start;
  for (let step = 0; step < 12; step++) {
    const page = await browse(jar, url);
    if (page.location) {
      if (new URL(page.location).origin !== provider) return page.location;
      url = page.location;
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(page.text)?.[1];
    if (!action) throw new Error(`the provider's page at ${url} has no form (HTTP ${page.status})`);
    const prompt = /name="prompt" value="(\w+)"/.exec(page.text)?.[1];
    const fields: Record<string, string> =
      prompt === 'login' ? { prompt, login, password: 'any' } : { prompt: prompt ?? 'consent' };
    const posted = await browse(jar, new URL(action.replaceAll('&amp;', '&'), url).href, fields);
    if (!posted.location) throw new Error(`the provider's ${prompt} form answered HTTP ${posted.status}`);
    if (new URL(posted.location).origin !== provider) return posted.location;
    url = posted.location;
  }
  throw new Error('the provider did not send the browser back within 12 steps');
}

/** The controller's answer to a callback: the hand-over code, or the error code, from the dashboard URL's fragment. */
export async function controllerCallback(
  jar: CookieJar,
  url: string,
): Promise<{ landing: string; code?: string; error?: string }> {
  const answered = await browse(jar, url);
  if (answered.status !== 303 || !answered.location)
    throw new Error(`the callback answered HTTP ${answered.status}: ${answered.text}`);
  const landing = new URL(answered.location);
  const fragment = new URLSearchParams(landing.hash.slice(1));
  const code = fragment.get('oidc');
  const error = fragment.get('oidc-error');
  return {
    landing: landing.origin + landing.pathname,
    ...(code !== null && { code }),
    ...(error !== null && { error }),
  };
}

export interface SignedInSession {
  token: string;
  tokenType: string;
  expiresIn: number;
  user: string;
  role: string;
}

/**
 * The whole round trip through the controller at `base` as `account`: login, the provider's
 * pages, the callback, the hand-over; answers what POST /api/oidc/session answered.
 */
export async function signInThrough(base: string, account: string): Promise<SignedInSession> {
  const jar = new CookieJar();
  const started = await browse(jar, `${base}/api/oidc/login`);
  if (started.status !== 303 || !started.location) throw new Error(`login answered HTTP ${started.status}`);
  const { code, error } = await controllerCallback(
    jar,
    await signInAtProvider(jar, started.location, account),
  );
  if (code === undefined) throw new Error(`the sign-in was refused: ${error}`);
  const response = await fetch(`${base}/api/oidc/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: jar.header(base) },
    body: JSON.stringify({ code }),
  });
  if (response.status !== 200)
    throw new Error(`the hand-over answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as SignedInSession;
}
