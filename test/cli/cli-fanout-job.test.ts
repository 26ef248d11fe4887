/**
 * `regbridge fanout` with --batch-size, --max-per-minute and --abort-failure-ratio as a child
 * process against a real store broker and real registers: the script runs as a job of the
 * controller service's engine (one send per register, requestId `<jobId>:<deviceId>`), the
 * abort rule stops sending, and bad values are usage errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { runCli } from '../support/controller-cli.ts';
import { controllerUrl, newController, startRealDevice } from '../support/controller-env.ts';
import { until } from '../support/waits.ts';

const NS = 'clijob';
const IDS = ['reg1', 'reg2', 'reg3'];

interface Doc {
  requestId: string;
  results: { deviceId: string; status: string; report?: string; error?: string }[];
  summary: Record<string, number>;
}

describe('regbridge fanout with rollout flags', () => {
  let broker: RunningBroker;
  let url: string;
  const devices: RunningDevice[] = [];

  beforeAll(async () => {
    broker = await brokersByName.embedded.start(NS);
    url = controllerUrl(broker);
    devices.push(...(await Promise.all(IDS.map((id) => startRealDevice(broker, NS, id)))));
    const probe = newController(broker, NS);
    await probe.start();
    await until(() => probe.devices().filter((d) => d.online).length === IDS.length, 'devices online');
    await probe.stop();
  });

  afterAll(async () => {
    await Promise.allSettled(devices.map((device) => device.stop()));
    await broker?.stop();
  });

  it('--batch-size and --max-per-minute run it as a job: every register once, exit 0', async () => {
    const run = await runCli(
      [
        'fanout',
        '-',
        '--mqtt-url',
        url,
        '--ns',
        NS,
        '--json',
        '--batch-size',
        '1',
        '--max-per-minute',
        '100',
      ],
      { input: 'PRINT one at a time\n' },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as Doc;
    expect(doc.results.map((r) => [r.deviceId, r.status, r.report])).toEqual(
      IDS.map((id) => [id, 'FINISHED', 'one at a time']),
    );
    for (const [i, device] of devices.entries()) {
      const tasks = device.queue.list().filter((t) => t.requestId === `${doc.requestId}:${IDS[i]}`);
      expect(tasks, IDS[i]).toHaveLength(1);
    }
  });

  it('--abort-failure-ratio stops sending after the failures; the rest is CANCELLED, exit 1', async () => {
    const run = await runCli(
      ['fanout', '-', '--mqtt-url', url, '--ns', NS, '--batch-size', '1', '--abort-failure-ratio', '0.5'],
      { input: 'FAIL drawer jammed\n' },
    );
    expect(run.code).toBe(1);
    const rows = run.stdout.split('\n').filter((line) => /^reg\d\s/.test(line));
    expect(rows[0]).toMatch(/^reg1\s+FAILURE\s.*drawer jammed$/);
    expect(rows[1]).toMatch(/^reg2\s+FAILURE\s.*CANCELLED: not sent: the job was aborted$/);
    expect(rows[2]).toMatch(/^reg3\s+FAILURE\s.*CANCELLED: not sent: the job was aborted$/);
    expect(run.stdout).toContain('3 devices: 0 finished, 3 failed, 0 offline, 0 no answer');
  });

  it('bad values are usage errors (exit 2) naming the flag', async () => {
    const run = await runCli([
      'fanout',
      '-',
      '--mqtt-url',
      url,
      '--batch-size',
      '0',
      '--abort-failure-ratio',
      '2',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--batch-size');
    expect(run.stderr).toContain('--abort-failure-ratio: expected a ratio from 0 to 1 (e.g. 0.5), got "2"');
  });
});
