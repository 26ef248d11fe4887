/**
 * `regbridge store-config` (docs/guide.md, "Add a store"): the command writes a store's files
 * and refuses bad flags with every problem at once; the generated mosquitto.conf runs in a real
 * mosquitto as the store broker, bridged through a simulated WAN link to a nats-server hub
 * (JetStream, MQTT listener), with registers started from the generated environment. The head
 * office's controller sees the registers and runs a job through the bridge; with the WAN link
 * cut mid-job the store finishes locally, and the results reach the head office once the link
 * is back, each script run once.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerStoreConfigCommand } from '../../cli/store-config-command.ts';
import { StoreController } from '../../controller/store-controller.ts';
import type { FanoutResult } from '../../controller/types.ts';
import { skipWithout } from '../support/binaries.ts';
import { type RunningProgramBroker, startNatsServer } from '../support/broker-programs.ts';
import { executions, startStore, type TestStore } from '../support/hub-stores.ts';
import { TestClient } from '../support/mqtt.ts';
import { until } from '../support/waits.ts';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** Runs `regbridge store-config ARGS` in-process; what it printed and its exit code. */
async function storeConfigCli(args: string[]): Promise<{ out: string; err: string; code: number }> {
  const program = new Command().exitOverride();
  registerStoreConfigCommand(program);
  let out = '';
  let err = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => {
    out += `${a.join(' ')}\n`;
  });
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => {
    err += `${a.join(' ')}\n`;
  });
  const before = process.exitCode;
  process.exitCode = 0;
  try {
    await program.parseAsync(['node', 'regbridge', 'store-config', ...args]);
    return { out, err, code: Number(process.exitCode ?? 0) };
  } finally {
    process.exitCode = before;
    write.mockRestore();
    log.mockRestore();
    error.mockRestore();
  }
}

describe('regbridge store-config', () => {
  it('prints the store broker mosquitto.conf with the bridge to every hub node', async () => {
    const { out, code } = await storeConfigCli([
      '--store',
      '042',
      '--hub',
      'nats-1,nats-2:1884,nats-3:1883',
      '--hub-username',
      'store-042',
      '--hub-password',
      's3cret',
      '--hub-cafile',
      '/etc/regbridge/hub-ca.pem',
    ]);
    expect(code).toBe(0);
    const lines = out.split('\n');
    for (const line of [
      'listener 1883 0.0.0.0',
      'connection hub',
      'address nats-1:1883 nats-2:1884 nats-3:1883',
      'round_robin true',
      'remote_clientid store-042',
      'remote_username store-042',
      'remote_password s3cret',
      'try_private false',
      'cleansession false',
      'bridge_cafile /etc/regbridge/hub-ca.pem',
      'bridge_insecure false',
      'topic stores/042/devices/+/state out 1',
      'topic stores/042/+/+/scripts in 1',
      'topic stores/042/+/+/cancel in 1',
    ])
      expect(lines).toContain(line);
    // Statuses and replies go up on a second connection that drops their retain flag.
    const results = lines.slice(lines.indexOf('connection hub-results'));
    expect(results.length).toBeLessThan(lines.length);
    for (const line of [
      'address nats-1:1883 nats-2:1884 nats-3:1883',
      'remote_clientid store-042-results',
      'cleansession false',
      'bridge_outgoing_retain false',
      'topic stores/042/devices/+/tasks/+/status out 1',
      'topic stores/042/devices/+/replies/# out 0',
    ])
      expect(results).toContain(line);
    const first = lines.slice(0, lines.indexOf('connection hub-results'));
    expect(first.filter((l) => l.startsWith('topic '))).toEqual([
      'topic stores/042/devices/+/state out 1',
      'topic stores/042/+/+/scripts in 1',
      'topic stores/042/+/+/cancel in 1',
    ]);
    expect(first).not.toContain('bridge_outgoing_retain false');
    // Nothing both ways: a hub without the bridge flag would send it back.
    expect(lines.filter((l) => l.startsWith('topic ') && !/ (in|out) [01]$/.test(l))).toEqual([]);
  });

  it('writes mosquitto.conf (owner-only), registers.sh and one .env per register with --out', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'regbridge-store-config-'));
    try {
      // An earlier run's file, readable by everyone: the new one is owner-only all the same.
      await writeFile(join(dir, 'mosquitto.conf'), 'old\n', { mode: 0o644 });
      const { out, code } = await storeConfigCli([
        '--store',
        'north-7',
        '--hub',
        'hub.example:8883',
        '--registers',
        '3',
        '--store-host',
        'bo-1',
        '--out',
        dir,
      ]);
      expect(code).toBe(0);
      expect(out).toContain('store north-7 (stores/north-7)');
      expect((await readdir(dir)).sort()).toEqual([
        'mosquitto.conf',
        'reg-01.env',
        'reg-02.env',
        'reg-03.env',
        'registers.sh',
      ]);
      expect((await stat(join(dir, 'mosquitto.conf'))).mode & 0o777).toBe(0o600);
      expect(await readFile(join(dir, 'reg-02.env'), 'utf8')).toBe(
        'REGBRIDGE_NS=stores/north-7\nREGBRIDGE_DEVICE_ID=reg-02\nREGBRIDGE_MQTT_URL=mqtt://bo-1:1883\nREGBRIDGE_MQTT_PROTOCOL=3.1.1\n',
      );
      expect(await readFile(join(dir, 'registers.sh'), 'utf8')).toContain(
        'regbridge serve --ns stores/north-7 --device-id reg-03 --mqtt-url mqtt://bo-1:1883 --mqtt-protocol 3.1.1 &',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // Each refusal: exit 2, nothing on stdout, every problem named, no secret echoed.
  it.each([
    {
      what: 'bad flags, every problem at once',
      args: ['--store', '04/2', '--hub', 'a b:1883', '--registers', 'reg-1,reg 2'],
      says: [
        '--store: must match [A-Za-z0-9_-]{1,64}',
        '--hub: expected host:port, got "a b:1883"',
        '--registers: register id "reg 2" must match',
      ],
    },
    {
      what: 'flags that need each other, never echoing the password',
      args: [
        '--store',
        '042',
        '--hub',
        'nats-1',
        '--hub-certfile',
        'client.pem',
        '--hub-password',
        'pw-not-echoed',
      ],
      says: [
        '--hub-keyfile: --hub-certfile and --hub-keyfile go together',
        '--hub-cafile: required with a client certificate',
        '--hub-username: required with --hub-password',
      ],
      never: 'pw-not-echoed',
    },
    {
      what: 'a line break in a value written into mosquitto.conf',
      args: [
        ...['--store', '042', '--hub', 'nats-1', '--hub-username', 'hq\nallow_anonymous true'],
        ...['--hub-password', 'pw\naddress evil:1883', '--password-file', '/etc/p\nx'],
      ],
      says: ['--hub-username', '--hub-password', '--password-file'].map(
        (name) => `${name}: must not contain control characters`,
      ),
      never: 'evil',
    },
  ])('refuses $what', async ({ args, says, never }) => {
    const { out, err, code } = await storeConfigCli(args);
    expect(code).toBe(2);
    expect(out).toBe('');
    for (const problem of says) expect(err).toContain(problem);
    if (never !== undefined) expect(err).not.toContain(never);
  });

  it('names the missing hub', async () => {
    const { err, code } = await storeConfigCli(['--store', '042']);
    expect(code).toBe(2);
    expect(err).toContain('--hub: required');
  });
});

describe.skipIf(skipWithout(['mosquitto', 'nats-server'], 'store-config with mosquitto'))(
  'a generated store bridged to a nats-server hub',
  () => {
    let hub: RunningProgramBroker;
    let store: TestStore;
    let controller: StoreController;
    const timeline: string[] = [];
    const t0 = Date.now();
    const mark = (what: string): number => timeline.push(`+${Date.now() - t0} ms ${what}`);
    const context = (results: readonly FanoutResult[]): string =>
      `results ${JSON.stringify(results)}\ntimeline:\n${timeline.join('\n')}\nstore broker:\n${store.broker.output()}`;

    beforeAll(async () => {
      hub = await startNatsServer();
      store = await startStore('s1', [`127.0.0.1:${hub.port}`], { registers: 2 });
      controller = new StoreController({ url: [hub.url], ns: store.ns, logger: silent, settleMs: 200 });
      controller.on('device', (e) => mark(`${e.deviceId} online=${e.online}`));
      await controller.start();
    }, 60_000);

    afterAll(async () => {
      await controller?.stop();
      await store?.stop();
      await hub?.stop();
    }, 30_000);

    it('shows the store registers online at the head office, through the bridge', async () => {
      await until(
        () => controller.devices().filter((d) => d.online).length === 2,
        'both registers online at the hub',
        20_000,
      );
      expect(controller.devices().map((d) => d.deviceId)).toEqual(['reg-1', 'reg-2']);
    });

    it('runs a job from the head office on every register of the store', async () => {
      const results = await controller.submit('PRINT hello', {
        to: 'all',
        deadlineMs: 20_000,
        requestId: 'first',
      });
      expect(
        results.map((r) => [r.deviceId, r.status]),
        context(results),
      ).toEqual([
        ['reg-1', 'FINISHED'],
        ['reg-2', 'FINISHED'],
      ]);
      expect(executions([store], 'first')).toEqual({ 's1/reg-1': 1, 's1/reg-2': 1 });
    });

    it("keeps the registers' states retained at the hub, and no task status", async () => {
      // Statuses first in one SUBSCRIBE: their retained messages, if any, come before the states'.
      const watcher = await TestClient.connect(hub.url, [
        `${store.ns}/devices/+/tasks/+/status`,
        `${store.ns}/devices/+/state`,
      ]);
      try {
        await watcher.waitForCount((m) => m.retain && m.topic.endsWith('/state'), 2, 'both retained states');
        expect(watcher.messages.filter((m) => m.topic.endsWith('/status')).map((m) => m.topic)).toEqual([]);
      } finally {
        await watcher.close();
      }
    });

    it('finishes a job locally while the WAN link is down and reports it when the link is back', async () => {
      const seen: string[] = [];
      const job = controller.submit('SLEEP 1000\nPRINT offline', {
        to: 'all',
        deadlineMs: 60_000,
        requestId: 'wan-lost',
        onResult: (r) => seen.push(`${r.deviceId} ${r.status}`),
      });
      await until(
        () => store.registers.every((r) => r.requests.has('wan-lost') && r.started.size === 2),
        'the job running on both registers',
        20_000,
      );
      mark('WAN cut');
      store.cutWan();
      // The store goes on: both finish, and the store's own broker has their end statuses.
      await until(
        () => store.registers.every((r) => r.finished.has('wan-lost')),
        'both finished locally',
        20_000,
      );
      const local = await TestClient.connect(store.broker.url, [`${store.ns}/devices/+/tasks/+/status`]);
      try {
        for (const r of store.registers)
          await local.waitFor(
            (m) =>
              m.topic.startsWith(`${store.ns}/devices/${r.id}/`) &&
              (m.json as { requestId?: string; status?: string }).requestId === 'wan-lost' &&
              (m.json as { status?: string }).status === 'FINISHED',
            `${r.id}'s FINISHED status at the store broker`,
          );
      } finally {
        await local.close();
      }
      expect(seen, 'nothing reached the head office while the link was down').toEqual([]);
      mark('WAN restored');
      store.restoreWan();
      const results = await job;
      expect(
        results.map((r) => [r.deviceId, r.status, r.status === 'FINISHED' && r.report]),
        context(results),
      ).toEqual([
        ['reg-1', 'FINISHED', 'offline'],
        ['reg-2', 'FINISHED', 'offline'],
      ]);
      expect(executions([store], 'wan-lost')).toEqual({ 's1/reg-1': 1, 's1/reg-2': 1 });
    }, 90_000);
  },
);
