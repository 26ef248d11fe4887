/**
 * SIGHUP no longer kills `serve` or `controller` (Node's default for it is to exit): each logs
 * that it had nothing to reload and keeps answering; SIGTERM still stops it cleanly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  CONTROLLER_ON_FREE_PORTS,
  SERVE_ON_FREE_PORTS,
  startCli,
  stopAll,
  waitForOutput,
  waitForPrinted,
} from '../support/cli-process.ts';

afterEach(stopAll);

describe('SIGHUP', () => {
  it.each([
    [
      'serve',
      [...SERVE_ON_FREE_PORTS, '--device-id', 'hup1', '--user', 'admin:pw'],
      'SIGHUP: serve has no users file to reload; ignored',
    ],
    ['controller', [...CONTROLLER_ON_FREE_PORTS], 'SIGHUP: no --users file to reload; ignored'],
  ])('%s logs it and keeps running', async (_name, args, line) => {
    const started = startCli(args);
    const port = Number(await waitForOutput(started, /listening on http:\/\/127\.0\.0\.1:(\d+)/));
    started.child.kill('SIGHUP');
    await waitForPrinted(started, () => started.stderr().includes(line), 'the SIGHUP log line');
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    expect(started.child.exitCode).toBeNull();
    started.child.kill('SIGTERM');
    expect(await started.exit).toEqual({ code: 0, signal: null });
  });
});
