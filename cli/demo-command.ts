/**
 * `regbridge demo`: a whole store in one process. An embedded store broker on a free port, N
 * simulated registers (startDevice with --mqtt-url pointing at it, each with its own device
 * credential), and one store controller that fans an X report out to group `all`. Prints the
 * summary table; exit code 0 when every register FINISHED. Everything is stopped before it
 * returns, whatever happened.
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type { z } from 'zod';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import { StoreController } from '../controller/store-controller.ts';
import { type FanoutResult, summarize } from '../controller/types.ts';
import { wholeNumber } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { logLevelFlag } from './common-flags.ts';
import { type RunningDevice, startDevice } from './device.ts';
import { addFlags, flag, flagSchema, parseFlags, switchFlag } from './flags.ts';
import { renderResults, renderSummary } from './format-table.ts';
import { cliLogger } from './logging.ts';
import { reportStartError } from './options.ts';
import { parseServeConfig } from './serve-config.ts';

export const DEMO_SCRIPT = [
  '# The demo: every register prints its X report (docs/simulator.md).',
  'X REPORT',
].join('\n');

export const demoFlags = {
  devices: flag('--devices <n>', 'simulated registers (1-50)', wholeNumber(1, 50), { default: '5' }),
  json: switchFlag('--json', 'print {results, summary} as JSON on stdout instead of the table'),
  logLevel: logLevelFlag('silent'),
};

export const demoSchema = flagSchema(demoFlags);

export type DemoOptions = z.infer<typeof demoSchema>;

const NS = 'pos';
const secret = (): string => randomBytes(18).toString('base64url');

/** Resolves once `count` devices are online in the controller's directory (or rejects after `ms`). */
function waitForOnline(controller: StoreController, count: number, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (controller.devices().filter((d) => d.online).length < count) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(
        new Error(
          `only ${controller.devices().filter((d) => d.online).length} of ${count} registers came online`,
        ),
      );
    }, ms);
    const done = (): void => {
      clearTimeout(timer);
      controller.off('device', check);
    };
    controller.on('device', check);
    check();
  });
}

/** Runs the demo store and returns the fan-out results; stops everything it started. */
export async function runDemo(
  options: DemoOptions,
  logger: Logger,
  say: (line: string) => void,
): Promise<FanoutResult[]> {
  const ids = Array.from({ length: options.devices }, (_, i) => `reg${i + 1}`);
  const passwords = new Map(ids.map((id) => [id, secret()]));
  const controllerPassword = secret();
  const users: BrokerUser[] = [
    { name: 'controller', password: controllerPassword, role: 'controller' },
    ...ids.map((id) => ({ name: id, password: passwords.get(id)!, role: 'device' as const })),
  ];
  const broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users,
    logger: logger.child({ component: 'broker' }),
  });
  const devices: RunningDevice[] = [];
  let controller: StoreController | undefined;
  try {
    await broker.start();
    const url = `mqtt://127.0.0.1:${broker.port}`;
    say(`store broker on ${url} (namespace ${NS}); starting ${ids.length} registers: ${ids.join(', ')}`);
    const started = await Promise.allSettled(
      ids.map((id, i) =>
        startDevice(
          parseServeConfig({
            port: 0,
            host: '127.0.0.1',
            deviceId: id,
            mqttUrl: `mqtt://${id}:${passwords.get(id)}@127.0.0.1:${broker.port}`,
            groups: [i % 2 === 0 ? 'front' : 'back'],
            users: [`admin:${secret()}`],
            logLevel: options.logLevel,
          }),
          { logger: logger.child({ deviceId: id }) },
        ),
      ),
    );
    for (const outcome of started) if (outcome.status === 'fulfilled') devices.push(outcome.value);
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    controller = new StoreController({
      url,
      username: 'controller',
      password: controllerPassword,
      ns: NS,
      clientId: 'regbridge-demo-controller',
      logger,
    });
    await controller.start();
    await waitForOnline(controller, ids.length, 10_000);
    say(`controller sees ${controller.devices().length} registers online; sending an X report to group all`);
    return await controller.submit(DEMO_SCRIPT, { to: 'all', deadlineMs: 15_000 });
  } finally {
    await controller?.stop();
    await Promise.allSettled(devices.map((device) => device.stop()));
    await broker.stop();
  }
}

export function registerDemoCommand(program: Command): void {
  const command = program
    .command('demo')
    .description('a whole store in one process: broker, registers and a controller fanning out an X report');
  addFlags(command, demoFlags);
  command.action(async (_flags: unknown, cmd: Command) => {
    let options: DemoOptions;
    try {
      options = parseFlags(cmd, demoFlags, demoSchema);
    } catch (error) {
      reportStartError(cmd, error);
      return;
    }
    const say = (line: string): void => {
      if (!options.json) process.stdout.write(`${line}\n`);
    };
    let results: FanoutResult[];
    try {
      results = await runDemo(options, cliLogger(options.logLevel), say);
    } catch (error) {
      console.error(`regbridge demo: ${(error as Error).message}`);
      process.exitCode = 2;
      return;
    }
    const summary = summarize(results);
    if (options.json) process.stdout.write(`${JSON.stringify({ results, summary }, null, 2)}\n`);
    else process.stdout.write(`\n${renderResults(results)}\n\n${renderSummary(summary)}\n`);
    process.exitCode = results.length === options.devices && summary.finished === options.devices ? 0 : 1;
  });
}
