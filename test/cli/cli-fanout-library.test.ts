/**
 * `regbridge fanout --script-id ID --param NAME=VALUE --db FILE` as a real child process: the
 * library script is rendered from the controller service's history file and sent to a real
 * register; rendering problems, an unknown id and a script that needs approval are exit 2
 * (docs/controller.md, "Script library").
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningDevice } from '../../cli/device.ts';
import { openHistory } from '../../controller/history-db.ts';
import { ScriptLibrary } from '../../controller/script-library.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { runCli } from '../support/controller-cli.ts';
import { controllerUrl, newController, startRealDevice } from '../support/controller-env.ts';
import { until } from '../support/waits.ts';

const NS = `clilib${randomUUID().slice(0, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'regbridge-fanout-lib-'));
const db = join(dir, 'history.db');
let broker: RunningBroker;
let device: RunningDevice;
let plain: string;
let guarded: string;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(NS);
  device = await startRealDevice(broker, NS, 'reg1', { groups: ['front'] });
  const probe = newController(broker, NS);
  await probe.start();
  await until(() => probe.devices().some((d) => d.online), 'the register online');
  await probe.stop();
  const history = openHistory(db);
  const library = new ScriptLibrary(history);
  plain = library.create(
    {
      name: 'hello',
      body: 'PRINT hello {{who}} x{{times}}',
      params: [
        { name: 'who', type: 'enum', values: ['ann', 'bob'] },
        { name: 'times', type: 'integer' },
      ],
    },
    'author',
  ).scriptId;
  guarded = library.create({ name: 'z', body: 'Z REPORT', requiresApproval: true }, 'author').scriptId;
  history.close();
});

afterAll(async () => {
  await device?.stop();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const base = () => [
  'fanout',
  '--mqtt-url',
  controllerUrl(broker),
  '--ns',
  NS,
  '--to',
  'reg1',
  '--db',
  db,
  '--json',
];

it('renders the library script with its parameters and sends it', async () => {
  const outcome = await runCli([...base(), '--script-id', plain, '--param', 'who=bob', '--param', 'times=3']);
  expect(outcome.code, outcome.stderr).toBe(0);
  const { results } = JSON.parse(outcome.stdout) as {
    results: { deviceId: string; status: string; report: string }[];
  };
  expect(results).toEqual([
    expect.objectContaining({ deviceId: 'reg1', status: 'FINISHED', report: 'hello bob x3' }),
  ]);
});

it('every rendering problem, an unknown id and a script needing approval are exit 2', async () => {
  const bad = await runCli([...base(), '--script-id', plain, '--param', 'who=carl', '--param', 'extra=1']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--param: parameter extra is not declared by the script');
  expect(bad.stderr).toContain('--param: parameter who must be one of ann, bob, got "carl"');
  expect(bad.stderr).toContain('--param: parameter times is required');
  const unknown = await runCli([...base(), '--script-id', 'nope']);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain(`--script-id: no library script nope in ${db}`);
  const approval = await runCli([...base(), '--script-id', guarded]);
  expect(approval.code).toBe(2);
  expect(approval.stderr).toContain('needs approval: start it as a job of the controller service');
});
