/**
 * Issue 26 (docs/security.md, "Secrets on the command line"): /proc/<pid>/cmdline is readable by
 * every local user, so once a service is ready its command line no longer shows a password given
 * as a flag; the variable form (REGBRIDGE_USER) works the same. Real `node bin/regbridge.js`
 * children, their /proc entries read as another user would.
 */
import { readFileSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import {
  type CliProcess,
  CONTROLLER_ON_FREE_PORTS,
  SERVE_ON_FREE_PORTS,
  startCli,
  stopAll,
  stopCli,
  waitForOutput,
} from '../support/cli-process.ts';

afterEach(stopAll);

const secret = `s3cret-${process.pid}-never-in-cmdline`;

function commandLine(started: CliProcess): string {
  return readFileSync(`/proc/${started.child.pid}/cmdline`, 'latin1');
}

async function login(port: string, userName: string, password: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName, password }),
  });
  await response.arrayBuffer();
  return response.status;
}

it('serve: a password given with --user is gone from /proc/<pid>/cmdline once it listens, and still logs in', async () => {
  const serve = startCli([...SERVE_ON_FREE_PORTS, '--no-mqtt', '--user', `admin:${secret}`]);
  const port = await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const shown = commandLine(serve);
  expect(shown).not.toContain(secret);
  expect(shown.replaceAll('\0', ' ').trim()).toBe('regbridge serve');
  expect(await login(port, 'admin', secret)).toBe(200);
  expect(await stopCli(serve)).toBe(0);
});

it('controller: neither --user nor --broker-user passwords stay in its command line', async () => {
  const controller = startCli([
    ...CONTROLLER_ON_FREE_PORTS,
    '--user',
    `admin:${secret}:admin`,
    '--broker-user',
    `dev1:${secret}-broker:device`,
  ]);
  const port = await waitForOutput(controller, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  expect(commandLine(controller)).not.toContain(secret);
  expect(await login(port, 'admin', secret)).toBe(200);
  expect(await stopCli(controller)).toBe(0);
});

it('broker: a --user password is not in its command line once it listens', async () => {
  const broker = startCli([
    'broker',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--user',
    `dev1:${secret}:device`,
  ]);
  await waitForOutput(broker, /broker listening on mqtt:\/\/127\.0\.0\.1:(\d+)/);
  expect(commandLine(broker)).not.toContain(secret);
  expect(await stopCli(broker)).toBe(0);
});

it('serve: REGBRIDGE_USER, the recommended form, logs in and shows in neither cmdline nor environ', async () => {
  const serve = startCli([...SERVE_ON_FREE_PORTS, '--no-mqtt'], { REGBRIDGE_USER: `admin:${secret}` });
  const port = await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  expect(commandLine(serve)).not.toContain(secret);
  expect(readFileSync(`/proc/${serve.child.pid}/environ`, 'latin1')).not.toContain(secret);
  expect(await login(port, 'admin', secret)).toBe(200);
  expect(await stopCli(serve)).toBe(0);
});
