import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { SERVE_ON_FREE_PORTS, startCli, stopAll, stopCli, waitForPrinted } from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';
import { silent } from '../support/loggers.ts';

afterEach(stopAll);

describe('usage errors exit 2, for every command', () => {
  it.each([
    [['servee'], "unknown command 'servee'"],
    [['serve', '--prot', '1'], "unknown option '--prot'"],
    [['broker', '--nope'], "unknown option '--nope'"],
    [['watch', '--bogus'], "unknown option '--bogus'"],
    [['run'], "missing required argument 'file'"],
    [['demo', '--devices'], "option '--devices <n>' argument missing"],
  ])('regbridge %j', async (args, message) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stderr).toContain('(add --help for the commands and flags)');
  });
});

describe('serve configuration errors', () => {
  it('--port abc says what it expected; --token-ttl takes a duration (1h) like every time flag', async () => {
    const run = await runCli(['serve', '--port', 'abc', '--token-ttl', '1h', '--auth-window', '2m']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([
      'regbridge serve: invalid configuration:',
      '  - --port: expected a port number (0-65535; 0 picks a free one), got "abc"',
    ]);
    expect(parseServeConfig({ deviceId: 'd', tokenTtl: '1h' }).tokenTtl).toBe(3600);
    expect(() => parseServeConfig({ deviceId: 'd', tokenTtl: '500ms' })).toThrow(
      /--token-ttl: not a duration/,
    );
  });

  it('a value from a variable names the variable and the command that read it', async () => {
    const run = await runCli(['serve'], { env: { REGBRIDGE_PORT: 'abc', REGBRIDGE_BROKER_PORT: '1e3' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      '  - --port (from REGBRIDGE_PORT, read by regbridge serve): expected a port number (0-65535; 0 picks a free one), got "abc"',
    );
    expect(run.stderr).toContain('  - --broker-port (from REGBRIDGE_BROKER_PORT, read by regbridge serve):');
  });

  it('--executor command with a program that does not exist is refused at start, not on every task', async () => {
    const run = await runCli([
      'serve',
      '--port',
      '0',
      '--no-mqtt',
      '--executor',
      'command',
      '--command',
      '/opt/x --flag',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      'regbridge serve: invalid configuration:\n  - --command: program /opt/x does not exist',
    );
  });
});

describe('serve output', () => {
  let held: Server | undefined;

  afterAll(() => held?.close());

  it('banner on stdout, logs on stderr; a taken default MQTT port moves without a "stopped" log', async () => {
    // The user's machine runs Mosquitto on 1883: make sure 1883 is taken (by it, or by us).
    held = createServer();
    await new Promise<void>((resolve) => {
      held!.once('error', () => {
        held = undefined;
        resolve();
      });
      held!.listen(1883, '0.0.0.0', resolve);
    });
    const serve = startCli(['serve', '--port', '0', '--host', '127.0.0.1', '--device-id', 'first-hour']);
    await waitForPrinted(serve, () => serve.stdout().includes('created user admin'), 'banner');
    await waitForPrinted(serve, () => serve.stderr().includes('"device started"'), 'log line');
    const lines = serve.stdout().trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^regbridge device first-hour listening on http:\/\/127\.0\.0\.1:\d+$/);
    const brokerPort =
      /^embedded MQTT broker on mqtt:\/\/127\.0\.0\.1:(\d+) \(namespace pos\) \(all interfaces: 0\.0\.0\.0:(\d+)\)$/.exec(
        lines[1]!,
      );
    expect(brokerPort?.[1]).toBe(brokerPort?.[2]);
    expect(lines[1]).not.toContain(':1883 ');
    expect(lines[2]).toBe(
      `note: MQTT port 1883 was taken (pass --broker-port to choose one); the embedded broker listens on ${brokerPort?.[1]} instead`,
    );
    expect(lines[3]).toMatch(
      /^created user admin with password \S+ \(shown once; pass --user NAME:PASSWORD to choose\)$/,
    );
    // Logs: JSON lines on stderr (not a terminal), the fallback a warning, never "stopped".
    const logs = serve
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; level: number });
    expect(logs.map((l) => l.msg)).toContain(
      'default MQTT port taken; the embedded broker listens on a free port',
    );
    expect(logs.map((l) => l.msg)).not.toContain('store broker stopped');
    expect(serve.stderr()).not.toContain(lines[3]!.split(' ')[5]!); // the password
    expect(await stopCli(serve)).toBe(0);
  });

  it('--auth off: the generated admin is announced as the embedded broker login only; none without it', async () => {
    const serve = startCli([...SERVE_ON_FREE_PORTS, '--auth', 'off']);
    await waitForPrinted(serve, () => serve.stdout().includes('created user admin'), 'banner');
    expect(serve.stdout()).toMatch(
      /created user admin with password \S+ for the embedded MQTT broker only \(--auth off: REST needs no token; shown once; pass --user NAME:PASSWORD to choose\)/,
    );
    expect(await stopCli(serve)).toBe(0);
    const bare = startCli(['serve', '--auth', 'off', '--no-mqtt', '--port', '0', '--host', '127.0.0.1']);
    await waitForPrinted(bare, () => bare.stderr().includes('"device started"'), 'start');
    expect(bare.stdout()).toMatch(/^regbridge device \S+ listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    expect(await stopCli(bare)).toBe(0);
  });
});

describe('regbridge run: --log-level and REGBRIDGE_ASYNC', () => {
  let device: RunningDevice;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    device = await startDevice(
      parseServeConfig({ port: 0, host: '127.0.0.1', mqtt: false, users: ['u:p'] }),
      { logger: silent },
    );
    dir = await mkdtemp(join(tmpdir(), 'regbridge-first-hour-'));
    file = join(dir, 'script.txt');
    await writeFile(file, 'PRINT hello\n');
  });

  afterAll(async () => {
    await device?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('logs on stderr at the level asked; the report alone on stdout', async () => {
    const url = `http://127.0.0.1:${device.httpPort}`;
    const quiet = await runCli(['run', file, '--url', url, '--user', 'u:p']);
    expect(quiet).toMatchObject({ code: 0, stdout: 'hello\n', stderr: '' });
    const chatty = await runCli(['run', file, '--url', url, '--user', 'u:p', '--log-level', 'info'], {
      env: { REGBRIDGE_ASYNC: '1' },
    });
    expect(chatty.code).toBe(0);
    expect(chatty.stdout).toBe('hello\n');
    const logs = chatty.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; taskId?: number });
    // REGBRIDGE_ASYNC=1 is --async: POST /api/vendor-script, then polling the task.
    expect(logs[0]).toMatchObject({
      msg: 'task submitted; polling until it ends',
      taskId: expect.any(Number),
    });
    expect(chatty.stderr).not.toContain('"p"');
    const sync = await runCli(['run', file, '--url', url, '--user', 'u:p', '--log-level', 'info'], {
      env: { REGBRIDGE_ASYNC: 'false' },
    });
    expect(sync.stderr).toContain('running the script through POST /api/fm-script');
  });
});
