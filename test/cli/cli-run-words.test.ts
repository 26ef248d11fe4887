/**
 * `regbridge run` refusals in the command line's words (the flag to pass or the file to fix),
 * not the REST API's (`body field 'fmScript'`, `Missing bearer token`). A real device over HTTP.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { runCli } from '../support/controller-cli.ts';
import { silent } from '../support/loggers.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-run-'));
const empty = join(dir, 'empty.txt');
const script = join(dir, 'x-report.txt');
let device: RunningDevice;
let url: string;

beforeAll(async () => {
  writeFileSync(empty, '');
  writeFileSync(script, 'X REPORT\n');
  device = await startDevice(
    parseServeConfig({ port: 0, host: '127.0.0.1', deviceId: 'till1', mqtt: false, users: ['admin:pw'] }),
    { logger: silent },
  );
  url = `http://127.0.0.1:${device.httpPort}`;
});
afterAll(async () => {
  await device?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('regbridge run speaks CLI', () => {
  it.each([
    [
      ['--user', 'admin:pw', 'EMPTY'],
      () => `regbridge run: the script file ${empty} is empty: nothing to run`,
    ],
    [['SCRIPT'], () => `regbridge run: the device at ${url} needs a login: pass --user NAME:PASSWORD`],
    [
      ['--user', 'admin:bad', 'SCRIPT'],
      () => `regbridge run: wrong user name or password in --user (the device at ${url} refused admin)`,
    ],
  ])('%j', async (args, expected) => {
    const files = args.map((a) => (a === 'EMPTY' ? empty : a === 'SCRIPT' ? script : a));
    const run = await runCli(['run', '--url', url, ...files]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`${expected()}\n`);
  });

  it('an unreachable device names --url', async () => {
    const run = await runCli(['run', '--url', 'http://127.0.0.1:1', script]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^regbridge run: cannot reach the device: .*ECONNREFUSED.*; check --url\n$/);
  });
});
