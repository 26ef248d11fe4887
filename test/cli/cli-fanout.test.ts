/**
 * `regbridge fanout` and `regbridge watch --once` as child processes against a real store broker
 * with real devices: the JSON document, the table, exit codes 0/1/2, REGBRIDGE_* variables.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { runCli } from '../support/controller-cli.ts';
import { controllerUrl, newController, startRealDevice } from '../support/controller-env.ts';
import { freePort } from '../support/ports.ts';
import { until } from '../support/waits.ts';

const NS = 'clitest';
const IDS = ['reg1', 'reg2', 'reg3'];

describe('regbridge fanout / watch (child processes)', () => {
  let broker: RunningBroker;
  let url: string;
  const devices: RunningDevice[] = [];
  let dir: string;
  let okScript: string;
  let failScript: string;

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(NS);
    url = controllerUrl(broker);
    devices.push(
      ...(await Promise.all(
        IDS.map((id, i) => startRealDevice(broker, NS, id, { groups: [i === 0 ? 'front' : 'back'] })),
      )),
    );
    // The CLI discovers from retained states: make sure they are on the broker first.
    const probe = newController(broker, NS);
    await probe.start();
    await until(() => probe.devices().filter((d) => d.online).length === IDS.length, 'devices online');
    await probe.stop();
    dir = await mkdtemp(join(tmpdir(), 'regbridge-cli-'));
    okScript = join(dir, 'ok.txt');
    failScript = join(dir, 'fail.txt');
    await writeFile(okScript, 'PRINT all good\nX REPORT\n');
    await writeFile(failScript, 'FAIL printer offline\n');
  });

  afterAll(async () => {
    await Promise.allSettled(devices.map((device) => device.stop()));
    await broker?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('--json: every device FINISHED, summary counts, exit 0, nothing but JSON on stdout', async () => {
    const run = await runCli([
      'fanout',
      okScript,
      '--mqtt-url',
      url,
      '--ns',
      NS,
      '--json',
      '--deadline',
      '15s',
    ]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      results: { deviceId: string; status: string; report: string }[];
      summary: unknown;
    };
    expect(doc.results.map((r) => [r.deviceId, r.status])).toEqual(IDS.map((id) => [id, 'FINISHED']));
    expect(doc.results[0]!.report.split('\n')[0]).toBe('all good');
    expect(doc.summary).toEqual({ finished: 3, failed: 0, offline: 0, noAnswer: 0 });
    // Not a terminal: no progress bar.
    expect(run.stderr).not.toContain('fanout [');
  });

  it('targets nobody (an unknown group, an empty namespace): exit 1 at once, whatever the deadline', async () => {
    // A deadline far beyond runCli's time limit: the command must not wait for it (issue 13 item 1).
    const run = await runCli(
      ['fanout', okScript, '--mqtt-url', url, '--ns', NS, '--to', 'group:nosuch', '--deadline', '10m'],
      { timeoutMs: 20_000 },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'regbridge fanout: no device targeted by --to group:nosuch (3 devices known)',
    );
    expect(run.stdout.trim()).toBe('0 devices: 0 finished, 0 failed, 0 offline, 0 no answer');
    const empty = await brokersByName.embedded.start('emptyns');
    try {
      const none = await runCli(
        [
          'fanout',
          okScript,
          '--mqtt-url',
          controllerUrl(empty),
          '--ns',
          'emptyns',
          '--deadline',
          '10m',
          '--json',
        ],
        { timeoutMs: 20_000 },
      );
      expect(none.code).toBe(1);
      const hint = (command: string) =>
        `regbridge ${command}: no register has reported under namespace emptyns on ${empty.controllerUrl}: ` +
        "check the broker port in --mqtt-url and --ns (the registers' --ns), and that a register runs\n";
      expect(none.stderr).toBe(hint('fanout'));
      expect(JSON.parse(none.stdout)).toMatchObject({ results: [], summary: { finished: 0 } });
      // watch --once says the same and exits 1 instead of 0 with an empty table.
      const watch = await runCli(['watch', '--once', '--mqtt-url', controllerUrl(empty), '--ns', 'emptyns'], {
        timeoutMs: 20_000,
      });
      expect([watch.code, watch.stdout, watch.stderr]).toEqual([
        1,
        '(no devices known yet)\n',
        hint('watch'),
      ]);
    } finally {
      await empty.stop();
    }
  });

  it('a namespace the broker refuses: exit 2, naming the filter, --ns and the role (watch and fanout)', async () => {
    for (const args of [
      ['watch', '--once'],
      ['fanout', okScript],
    ]) {
      // A refusal is retried until --connect-timeout (a clustered broker refuses for a while).
      const run = await runCli([...args, '--mqtt-url', url, '--ns', 'shop', '--connect-timeout', '1s'], {
        timeoutMs: 20_000,
      });
      expect(run.code, args[0]).toBe(2);
      expect(run.stderr).toMatch(/refused the subscription to shop\/devices\/\+\/state/);
      expect(run.stderr).toContain('--ns shop');
      expect(run.stderr).toContain('controller role');
      expect(run.stderr).not.toContain('Unspecified error');
    }
  });

  it('a failing device makes exit code 1; the table shows the error', async () => {
    const run = await runCli(['fanout', failScript, '--mqtt-url', url, '--ns', NS, '--to', 'reg2']);
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^DEVICE\s+STATUS\s+TASK\s+DURATION\s+REPORT \/ ERROR$/);
    expect(lines[2]).toMatch(/^reg2\s+FAILURE\s+\d+\s+\S+\s+printer offline$/);
    expect(lines.at(-1)).toBe('1 device: 0 finished, 1 failed, 0 offline, 0 no answer');
  });

  it('flags from REGBRIDGE_* variables; an unknown id is OFFLINE and exit code 1; script from stdin', async () => {
    const run = await runCli(['fanout', '-'], {
      env: {
        REGBRIDGE_MQTT_URL: url,
        REGBRIDGE_NS: NS,
        REGBRIDGE_TO: 'reg1,ghost',
        REGBRIDGE_JSON: '1',
        REGBRIDGE_DEADLINE: '15s',
      },
      input: 'PRINT from stdin\n',
    });
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout) as { results: unknown[]; summary: unknown };
    expect(doc.results).toEqual([
      expect.objectContaining({ deviceId: 'reg1', status: 'FINISHED', report: 'from stdin' }),
      { deviceId: 'ghost', status: 'OFFLINE' },
    ]);
    expect(doc.summary).toEqual({ finished: 1, failed: 0, offline: 1, noAnswer: 0 });
  });

  it('a group target with group:<G>', async () => {
    const run = await runCli([
      'fanout',
      okScript,
      '--mqtt-url',
      url,
      '--ns',
      NS,
      '--to',
      'group:back',
      '--json',
    ]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as { results: { deviceId: string }[] };
    expect(doc.results.map((r) => r.deviceId)).toEqual(['reg2', 'reg3']);
  });

  it.each([
    ['an unknown flag', ['fanout', 'x.txt', '--mqtt-url', 'mqtt://127.0.0.1:1', '--bogus'], /unknown option/],
    [
      'no script argument',
      ['fanout', '--mqtt-url', 'mqtt://127.0.0.1:1'],
      /<scriptFile>: required \(or --script-id ID\)/,
    ],
    ['no --mqtt-url', ['fanout', 'SCRIPT'], /--mqtt-url: required/],
    [
      'a bad --to',
      ['fanout', 'SCRIPT', '--mqtt-url', 'mqtt://127.0.0.1:1', '--to', 'group:a/b'],
      /--to: invalid group id/,
    ],
    [
      'a bad --deadline',
      ['fanout', 'SCRIPT', '--mqtt-url', 'mqtt://127.0.0.1:1', '--deadline', 'soon'],
      /--deadline: not a duration: "soon"/,
    ],
    [
      'a missing script file',
      ['fanout', '/nonexistent/script.txt', '--mqtt-url', 'mqtt://127.0.0.1:1'],
      /cannot read/,
    ],
  ])('usage error (%s): exit code 2 and a message', async (_name, args, message) => {
    const run = await runCli(args.map((a) => (a === 'SCRIPT' ? okScript : a)));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });

  it('connection errors exit 2: nothing listening, wrong password (never printed)', async () => {
    const closed = await runCli(['fanout', okScript, '--mqtt-url', `mqtt://127.0.0.1:${await freePort()}`]);
    expect(closed.code).toBe(2);
    expect(closed.stderr).toMatch(/cannot connect to mqtt:\/\/127\.0\.0\.1:\d+/);
    const port = new URL(url).port;
    const denied = await runCli([
      'fanout',
      okScript,
      '--mqtt-url',
      `mqtt://127.0.0.1:${port}`,
      '--user',
      'controller:wrong-pw-123',
    ]);
    expect(denied.code).toBe(2);
    expect(denied.stderr).toMatch(/cannot connect/);
    expect(denied.stderr).not.toContain('wrong-pw-123');
    // A device user may connect only with its register's client id (contract 6.1): refused, exit 2.
    const creds = broker.deviceCreds('reg1');
    const device = await runCli([
      'fanout',
      okScript,
      '--mqtt-url',
      `mqtt://127.0.0.1:${port}`,
      '--ns',
      NS,
      '--user',
      `${creds.username}:${creds.password}`,
      '--connect-timeout',
      '1s',
    ]);
    expect(device.code).toBe(2);
    expect(device.stderr).toMatch(/Not authorized \(a controller needs a user with the controller role/);
  });

  it('watch --once prints the device table after discovery and exits 0', async () => {
    const run = await runCli(['watch', '--once', '--mqtt-url', url, '--ns', NS]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^DEVICE\s+ONLINE\s+GROUPS\s+QUEUE\s+LAST TASK\s+SEEN$/);
    expect(lines.slice(2).map((l) => l.split(/\s+/).slice(0, 2))).toEqual(IDS.map((id) => [id, 'yes']));
    // Earlier tests ran tasks: reg1's latest is the one from stdin.
    expect(lines.find((l) => l.startsWith('reg1'))).toMatch(/#\d+ FINISHED: from stdin/);
  });

  it('watch --once --json gives the directory for machines', async () => {
    const run = await runCli(['watch', '--once', '--json', '--mqtt-url', url, '--ns', NS]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      devices: { deviceId: string; online: boolean; queue: unknown }[];
    };
    expect(doc.devices.map((d) => [d.deviceId, d.online])).toEqual(IDS.map((id) => [id, true]));
    expect(doc.devices[0]!.queue).toEqual({ queued: 0, running: 0 });
    // SEEN / reportedAt is the device's own time of its last report (its latest task's end, or
    // its start), not the watcher's receive time.
    const reg1 = doc.devices[0] as unknown as {
      reportedAt: string;
      startedAt: string;
      latestTask: { finishedAt: string } | null;
    };
    expect(reg1.reportedAt).toBe(reg1.latestTask?.finishedAt ?? reg1.startedAt);
  });
});
