/**
 * Headless Chromium for the dashboard suites, driven by playwright-core: the binary, the probe
 * flags that work on these machines (no sandbox as root, no network beyond loopback), and a
 * logged-in page of the controller's dashboard.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { ADMIN } from './controller-service.ts';
import { until } from './waits.ts';

export const CHROMIUM = process.env.REGBRIDGE_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Outside CI a machine without Chromium skips with this reason; in CI a missing browser fails. */
export const chromiumSkipReason =
  existsSync(CHROMIUM) || process.env.CI ? undefined : `no Chromium at ${CHROMIUM} (apt install chromium)`;
export const LIVE_TIMEOUT = 20_000;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/** Opens the dashboard at `port` and logs in as ADMIN; resolves once the registers are shown. */
export async function openDashboard(browser: Browser, port: number, width = 1280): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.getByLabel('User name').fill(ADMIN.name);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: /Registers/ }).waitFor({ timeout: LIVE_TIMEOUT });
  return page;
}

/**
 * A part's box on screen. The dashboard's live lists redraw their rows once per animation frame,
 * so a row found a moment ago may be between two drawings (boundingBox() is then null).
 */
export async function onScreenBox(
  part: Locator,
): Promise<{ x: number; y: number; width: number; height: number }> {
  let box: { x: number; y: number; width: number; height: number } | null = null;
  await until(
    async () => {
      box = await part.boundingBox();
      return box !== null;
    },
    `${part} on screen`,
    LIVE_TIMEOUT,
  );
  return box!;
}
