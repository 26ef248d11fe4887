/**
 * `regbridge controller` with single sign-on, as a child process (docs/controller.md, "Single
 * sign-on"): the client secret from REGBRIDGE_OIDC_CLIENT_SECRET, a full sign-in against a real
 * provider (oidc-provider), and nothing secret in its output even at --log-level debug; a
 * missing client id is a start error naming the flag.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import {
  CONTROLLER_ON_FREE_PORTS,
  startCli,
  stopAll,
  stopCli,
  waitForOutput,
} from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';
import { OIDC_CLIENT, ROLE_CLAIM, signInThrough, startProvider } from '../support/oidc-provider.ts';
import { freePort } from '../support/ports.ts';

afterEach(() => stopAll());

it('signs in with the secret from the environment; the secret, codes and tokens never reach the output', async () => {
  const providerPort = await freePort();
  const secret = `${OIDC_CLIENT.secret}-${randomUUID()}`;
  const service = startCli(
    [
      ...CONTROLLER_ON_FREE_PORTS,
      '--user',
      'admin:admin-pw-for-tests',
      '--oidc-issuer',
      `http://127.0.0.1:${providerPort}`,
      '--oidc-client-id',
      OIDC_CLIENT.id,
      '--oidc-name',
      'Head Office ID',
      '--log-level',
      'debug',
    ],
    { REGBRIDGE_OIDC_CLIENT_SECRET: secret },
  );
  const port = await waitForOutput(service, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const base = `http://127.0.0.1:${port}`;
  const provider = await startProvider(
    providerPort,
    `${base}/api/oidc/callback`,
    { alice: { [ROLE_CLAIM]: 'author' } },
    secret,
  );
  try {
    expect(await (await fetch(`${base}/api/oidc`)).json()).toEqual({
      enabled: true,
      name: 'Head Office ID',
      loginUrl: '/api/oidc/login',
    });
    const session = await signInThrough(base, 'alice');
    expect(session).toMatchObject({ user: 'oidc:alice', role: 'author' });
    const me = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${session.token}` } });
    expect(await me.json()).toEqual({ user: 'oidc:alice', role: 'author' });
    // A refused callback is logged (warn): its reason, not what it carried.
    const refused = await fetch(`${base}/api/oidc/callback?code=some-code-value&state=some-state-value`, {
      redirect: 'manual',
    });
    expect(refused.headers.get('location')).toBe(`${base}/#oidc-error=OIDC_FAILED`);
    expect(await stopCli(service)).toBe(0);
    const output = service.stdout() + service.stderr();
    expect(output).toContain('single sign-on refused');
    for (const secretText of [secret, session.token, 'some-code-value'])
      expect(output.includes(secretText), secretText).toBe(false);
  } finally {
    await provider.stop();
  }
});

it('--oidc-issuer without --oidc-client-id is a start error naming the flag', async () => {
  const outcome = await runCli([
    ...CONTROLLER_ON_FREE_PORTS,
    '--oidc-issuer',
    'https://idp.example.com/realms/shop',
  ]);
  expect(outcome.code).toBe(2);
  expect(outcome.stderr).toContain('--oidc-client-id: required with --oidc-issuer');
});
