/**
 * `regbridge demo`: a whole store in one process: an embedded broker, N simulated registers and
 * the controller service, whose first job sends an X report to group `all`. Runs until Ctrl-C, or
 * with --once stops after that job (exit 0 when every register FINISHED); everything is stopped.
 */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type { z } from 'zod';
import { type BrokerUser, StoreBroker } from '../broker/store-broker.ts';
import { asFanoutResult } from '../controller/job-results.ts';
import type { Job, JobSummary } from '../controller/job-types.ts';
import type { StoreController } from '../controller/store-controller.ts';
import { type FanoutResult, summarize } from '../controller/types.ts';
import { port, wholeNumber } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { indexedCommand } from './command-index.ts';
import { logLevelFlag } from './common-flags.ts';
import { type RunningControllerService, startControllerService } from './controller-service.ts';
import { type RunningDevice, startDevice } from './device.ts';
import { addFlags, flag, flagSchema, parseFlagsOrReport, switchFlag } from './flags.ts';
import { renderResults, renderSummary } from './format-table.ts';
import { cliLogger } from './logging.ts';
import { onShutdownSignal } from './options.ts';
import { parseServeConfig } from './serve-config.ts';

export const DEMO_SCRIPT = [
  '# The demo: every register prints its X report (docs/simulator.md).',
  'X REPORT',
].join('\n');

export const demoFlags = {
  devices: flag('--devices <n>', 'simulated registers (1-50)', wholeNumber(1, 50), { default: '5' }),
  port: flag('--port <port>', 'HTTP port of the dashboard and API (taken: a free one is used)', port, {
    default: '8090',
  }),
  once: switchFlag('--once', 'stop after the first job instead of serving the dashboard until Ctrl-C'),
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
    const online = (): number => controller.devices().filter((d) => d.online).length;
    const check = (): void => {
      if (online() < count) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`only ${online()} of ${count} registers came online`));
    }, ms);
    const done = (): void => {
      clearTimeout(timer);
      controller.off('device', check);
    };
    controller.on('device', check);
    check();
  });
}

/** The first job's end (the X report), through the service's engine. */
function runFirstJob(service: RunningControllerService): Promise<Job> {
  const outcome = service.engine.create(
    { script: DEMO_SCRIPT, target: { group: 'all' }, name: 'demo: X report', deadlineMs: 15_000 },
    { user: 'demo', address: '' },
  );
  if (outcome.kind !== 'created') throw new Error(`the demo job was not created: ${outcome.kind}`);
  const { jobId } = outcome.job;
  return new Promise((resolve) => {
    const onJob = (job: JobSummary): void => {
      if (job.jobId !== jobId || job.endedAt === undefined) return;
      service.engine.off('job', onJob);
      resolve(service.engine.get(jobId)!);
    };
    service.engine.on('job', onJob);
    if (service.engine.get(jobId)?.endedAt !== undefined) onJob(service.engine.get(jobId)!);
  });
}

export interface RunningDemo {
  results: FanoutResult[];
  dashboard: { url: string; user: string; password: string };
  /** How to reach the demo with the other commands: the broker login, each register's REST API. */
  access: string[];
  /** Defaulted ports that were taken and moved (the dashboard's 8090). */
  notes: readonly string[];
  stop(): Promise<void>;
}

/** Starts the demo store, runs the first job; the caller stops it (it is stopped on failure). */
export async function startDemo(
  options: DemoOptions,
  logger: Logger,
  say: (line: string) => void,
): Promise<RunningDemo> {
  const ids = Array.from({ length: options.devices }, (_, i) => `reg${i + 1}`);
  const passwords = new Map(ids.map((id) => [id, secret()]));
  const restPasswords = new Map(ids.map((id) => [id, secret()]));
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
  let service: RunningControllerService | undefined;
  const stop = async (): Promise<void> => {
    await service?.stop();
    await Promise.allSettled(devices.map((device) => device.stop()));
    await broker.stop();
  };
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
            users: [`admin:${restPasswords.get(id)}`],
            logLevel: options.logLevel,
          }),
          { logger: logger.child({ deviceId: id }) },
        ),
      ),
    );
    for (const outcome of started) if (outcome.status === 'fulfilled') devices.push(outcome.value);
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const admin = { name: 'admin', password: secret() };
    service = await startControllerService(
      {
        port: options.port,
        host: '127.0.0.1',
        mqttUrl: url,
        mqttUser: { name: 'controller', password: controllerPassword },
        brokerHost: '127.0.0.1',
        brokerUsers: [],
        ns: NS,
        users: [admin],
        db: ':memory:',
        tokenTtl: 3600,
      },
      { logger, freePortIfTaken: true },
    );
    await waitForOnline(service.controller, ids.length, 10_000);
    say(`controller sees ${ids.length} registers online; job 1: an X report to group all`);
    const job = await runFirstJob(service);
    const mqtt = `mqtt://controller:${controllerPassword}@127.0.0.1:${broker.port}`;
    return {
      results: job.results.map(asFanoutResult),
      dashboard: { url: `http://127.0.0.1:${service.httpPort}/`, user: admin.name, password: admin.password },
      access: [
        `store broker login for watch and fanout: regbridge watch --once --mqtt-url ${mqtt} --ns ${NS}`,
        ...devices.map(
          (device) =>
            `${device.config.deviceId} REST API on http://127.0.0.1:${device.httpPort}: regbridge run FILE --url http://127.0.0.1:${device.httpPort} --user admin:${restPasswords.get(device.config.deviceId)}`,
        ),
      ],
      notes: service.portFallbacks,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export function registerDemoCommand(program: Command): void {
  const command = indexedCommand(program, 'demo');
  addFlags(command, demoFlags);
  command.action(async (_flags: unknown, cmd: Command) => {
    const options = parseFlagsOrReport(cmd, demoFlags, demoSchema);
    if (!options) return;
    const say = (line: string): void => {
      if (!options.json) process.stdout.write(`${line}\n`);
    };
    let demo: RunningDemo;
    try {
      demo = await startDemo(options, cliLogger(options.logLevel), say);
    } catch (error) {
      console.error(`regbridge demo: ${(error as Error).message}`);
      process.exitCode = 2;
      return;
    }
    const { results } = demo;
    const summary = summarize(results);
    if (options.json) process.stdout.write(`${JSON.stringify({ results, summary }, null, 2)}\n`);
    else process.stdout.write(`\n${renderResults(results)}\n\n${renderSummary(summary)}\n`);
    const allFinished = results.length === options.devices && summary.finished === options.devices;
    if (options.once) {
      await demo.stop();
      process.exitCode = allFinished ? 0 : 1;
      return;
    }
    const { url, user, password } = demo.dashboard;
    // The dashboard line is not part of --json's document: it goes to stderr then.
    const tell = options.json ? process.stderr : process.stdout;
    tell.write(`\ndashboard on ${url} (log in as ${user}, password ${password}); Ctrl-C stops the demo\n`);
    for (const note of demo.notes) tell.write(`note: ${note}; the dashboard port above was chosen instead\n`);
    for (const line of demo.access) tell.write(`${line}\n`);
    onShutdownSignal(() => demo.stop());
  });
}
