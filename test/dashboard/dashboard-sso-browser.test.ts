/**
 * Single sign-on in a real browser (headless Chromium, playwright-core) against a real controller
 * service and a real OpenID Connect provider (oidc-provider): "Sign in with ..." leads through
 * the provider's own login and consent pages and back to a dashboard logged in with the role
 * the provider's claim names, controls shown and hidden for that role, and no code or token left
 * in the address bar (docs/controller.md, "Single sign-on").
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { chromiumSkipReason, LIVE_TIMEOUT, launchChromium } from '../support/chromium.ts';
import { startService } from '../support/controller-service.ts';
import {
  OIDC_CLIENT,
  ROLE_CLAIM,
  type RunningProvider,
  SCOPE_CLAIM,
  startProvider,
} from '../support/oidc-provider.ts';
import { freePort } from '../support/ports.ts';

const ns = `stores/ssoui${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let provider: RunningProvider;
let service: RunningControllerService;
let browser: Browser;
let base: string;

beforeAll(async () => {
  if (chromiumSkipReason) return;
  broker = await brokersByName.embedded.start(ns);
  const providerPort = await freePort();
  service = await startService(broker, ns, {
    settings: {
      oidc: {
        issuer: `http://127.0.0.1:${providerPort}`,
        clientId: OIDC_CLIENT.id,
        clientSecret: OIDC_CLIENT.secret,
        roleClaim: ROLE_CLAIM,
        scopeClaim: SCOPE_CLAIM,
        scopes: 'openid profile email',
        name: 'Head Office ID',
      },
    },
  });
  base = `http://127.0.0.1:${service.httpPort}`;
  provider = await startProvider(providerPort, `${base}/api/oidc/callback`, {
    alice: { [ROLE_CLAIM]: 'approver' },
    dave: { [ROLE_CLAIM]: 'operator', [SCOPE_CLAIM]: 'group=front' },
    bob: {},
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await provider?.stop();
  await broker?.stop();
});

/** A fresh browser (no provider session) signs in as `login` through the provider's pages. */
async function signInAs(login: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'Sign in with Head Office ID' }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.locator('#whoami:not([hidden])').waitFor({ timeout: LIVE_TIMEOUT });
  return page;
}

it.skipIf(chromiumSkipReason)(
  'an approver signs in at the provider and lands on the dashboard as approver',
  async () => {
    const page = await signInAs('alice');
    expect(await page.textContent('#whoami')).toBe('oidc:alice (approver)');
    expect(page.url()).toBe(`${base}/`);
    await page.getByRole('heading', { name: /Registers/ }).waitFor();
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await page.locator('#jobs-heading').waitFor();
    expect(await page.isVisible('#new-job-link')).toBe(false);
    await page.getByRole('link', { name: 'Scripts', exact: true }).click();
    await page.locator('#library').waitFor();
    expect(await page.isVisible('#library-editor')).toBe(false);
    // The session survives a reload like a password login's (the token is in sessionStorage).
    await page.reload();
    await page.locator('#whoami:not([hidden])').waitFor({ timeout: LIVE_TIMEOUT });
    expect(await page.textContent('#whoami')).toBe('oidc:alice (approver)');
    await page.click('#logout');
    await page.getByText('Logged out.').waitFor();
    expect(await page.isVisible('#whoami')).toBe(false);
    await page.context().close();
  },
);

it.skipIf(chromiumSkipReason)(
  'an operator gets the job form and its scope; no role claim is a viewer',
  async () => {
    const operator = await signInAs('dave');
    expect(await operator.textContent('#whoami')).toBe('oidc:dave (operator, group=front)');
    await operator.getByRole('link', { name: 'Jobs', exact: true }).click();
    await operator.locator('#new-job-link').waitFor();
    await operator.click('#new-job-link');
    await operator.locator('#job-form').waitFor();
    await operator.getByRole('link', { name: 'Scripts', exact: true }).click();
    await operator.locator('#library').waitFor();
    expect(await operator.isVisible('#library-editor')).toBe(false);
    await operator.context().close();
    const viewer = await signInAs('bob');
    expect(await viewer.textContent('#whoami')).toBe('oidc:bob (viewer)');
    await viewer.getByRole('link', { name: 'Jobs', exact: true }).click();
    await viewer.locator('#jobs-heading').waitFor();
    expect(await viewer.isVisible('#new-job-link')).toBe(false);
    await viewer.context().close();
  },
);

it.skipIf(chromiumSkipReason)('a refused sign-on is shown in the login view', async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/api/oidc/callback?state=forged&code=forged`);
  await page.getByText('Single sign-on failed: sign in again.').waitFor({ timeout: LIVE_TIMEOUT });
  expect(page.url()).toBe(`${base}/`);
  expect(await page.isVisible('#login-form')).toBe(true);
  await page.close();
});

it.skipIf(chromiumSkipReason)(
  'the login view offers "Sign in with Head Office ID" under the password form (screenshot saved)',
  async () => {
    // REGBRIDGE_SCREENSHOT_DIR=docs/screenshots refreshes the docs' picture (docs/dashboard.md).
    const shots = process.env.REGBRIDGE_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), 'regbridge-sso-')));
    const page = await browser.newPage({ viewport: { width: 1280, height: 700 } });
    await page.goto(`${base}/`);
    const link = page.getByRole('link', { name: 'Sign in with Head Office ID' });
    await link.waitFor({ timeout: LIVE_TIMEOUT });
    expect(await link.getAttribute('href')).toBe('/api/oidc/login');
    const form = (await page.locator('#login-form').boundingBox())!;
    const button = (await link.boundingBox())!;
    expect(button.y).toBeGreaterThan(form.y + form.height - 1);
    const shot = join(shots, 'login-sso-desktop.png');
    await page.screenshot({ path: shot });
    expect((await stat(shot)).size).toBeGreaterThan(5_000);
    await page.close();
    if (!process.env.REGBRIDGE_SCREENSHOT_DIR) await rm(shots, { recursive: true, force: true });
  },
);
