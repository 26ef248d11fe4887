/**
 * The head office's hub built and tested (docs/topology.md): a three-node NATS JetStream cluster
 * with its MQTT listener; two stores, each a Mosquitto store broker running the configuration
 * `regbridge store-config` generates, bridged to all three nodes (store s1 first to n1, s2 first
 * to n2) through simulated WAN links, with three registers each; the head office's controller
 * on n3 serving every store (`ns: 'stores/+'`, registers keyed `<store>/<id>`). A fleet job runs on every register while n1 (the node of s1's bridge) is killed with
 * SIGKILL: every result arrives, each script ran once. Then store s2's WAN link drops mid-job:
 * the store finishes locally and the results reach the head office once the link is back. Then
 * n3 (the controller's node) is killed mid-job: the controller reconnects to another node and
 * re-asks the registers of open results. A failed job prints the results and a timeline.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreController } from '../../controller/store-controller.ts';
import type { FanoutResult } from '../../controller/types.ts';
import { skipWithout } from '../support/binaries.ts';
import { executions, startStore, type TestStore } from '../support/hub-stores.ts';
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts';
import { until } from '../support/waits.ts';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const REGISTERS = 3;
/** A job through a node loss waits out JetStream's leader elections (docs/topology.md). */
const JOB_DEADLINE_MS = 90_000;
const SLOW_MS = 180_000;

describe.skipIf(skipWithout(['nats-server', 'mosquitto'], 'hub cluster'))(
  'stores bridged into a three-node NATS cluster',
  () => {
    let cluster: NatsCluster;
    const stores: TestStore[] = [];
    /** The head office: one controller for every store. */
    let controller: StoreController;
    const timeline: string[] = [];
    const t0 = Date.now();
    const mark = (what: string): number => timeline.push(`+${Date.now() - t0} ms ${what}`);
    const context = (results: readonly (readonly [string, string, string])[]): string =>
      [
        `results: ${JSON.stringify(results)}`,
        'timeline:',
        ...timeline.slice(-60),
        ...stores.map((s) => `--- store ${s.id} broker\n${s.broker.output().slice(-1500)}`),
        cluster.logs(),
      ].join('\n');

    beforeAll(async () => {
      cluster = await startNatsCluster();
      const hub = cluster.nodes.map((n) => new URL(n.mqttUrl).host);
      stores.push(
        ...(await Promise.all([
          startStore('s1', hub, { registers: REGISTERS, first: 0 }),
          startStore('s2', hub, { registers: REGISTERS, first: 1 }),
        ])),
      );
      controller = new StoreController({
        url: cluster.urlList(2),
        ns: 'stores/+',
        logger: silent,
        settleMs: 200,
        connectTimeoutMs: 30_000,
      });
      controller.on('device', (e) => mark(`${e.deviceId} online=${e.online}`));
      controller.on('connection', (state) => mark(`controller ${state}`));
      controller.on('reasked', (n) => mark(`controller re-asked ${n} registers`));
      await controller.start();
    }, 120_000);

    afterAll(async () => {
      // HUB_TIMELINE=1: what the head office saw, for the figures of docs/topology.md.
      if (process.env.HUB_TIMELINE) process.stderr.write(`${timeline.join('\n')}\n`);
      await controller?.stop();
      await Promise.allSettled(stores.map((s) => s.stop()));
      await cluster?.stop();
    }, 60_000);

    const online = (): number => controller.devices().filter((d) => d.online).length;

    /** Every register online at the head office (through its store's bridge). */
    async function allOnline(timeoutMs = 60_000): Promise<void> {
      await until(
        () => online() === stores.length * REGISTERS,
        'every register online at the head office',
        timeoutMs,
      );
    }

    /** A fleet job: the script to every register of every store; one result each, keyed store/register. */
    async function fleetJob(
      script: string,
      requestId: string,
      during?: () => Promise<void>,
    ): Promise<(readonly [string, string, string])[]> {
      mark(`job ${requestId} sent`);
      const job = controller.submit(script, { to: 'all', deadlineMs: JOB_DEADLINE_MS, requestId });
      if (during) await during();
      const results = (await job).map(
        (r: FanoutResult) => [r.deviceId, r.status, r.status === 'FINISHED' ? r.report : ''] as const,
      );
      mark(`job ${requestId} done`);
      return results;
    }

    const everyRegister = (report: string): (readonly [string, string, string])[] =>
      stores.flatMap((s) => s.registers.map((r) => [`${s.id}/${r.id}`, 'FINISHED', report] as const));
    const once = (): Record<string, number> =>
      Object.fromEntries(stores.flatMap((s) => s.registers.map((r) => [`${s.id}/${r.id}`, 1])));
    const runningEverywhere = (requestId: string): Promise<void> =>
      until(
        () => stores.every((s) => s.registers.every((r) => (r.requests.get(requestId) ?? []).length === 1)),
        `${requestId} queued on every register`,
        30_000,
      );

    it(
      'runs a fleet job across both stores through the cluster',
      async () => {
        await allOnline();
        const results = await fleetJob('PRINT fleet', 'fleet-1');
        expect(results, context(results)).toEqual(everyRegister('fleet'));
        expect(executions(stores, 'fleet-1')).toEqual(once());
      },
      SLOW_MS,
    );

    it(
      'survives the SIGKILL of n1 mid-job: every result arrives, nothing runs twice',
      async () => {
        const results = await fleetJob('SLEEP 1500\nPRINT n1 lost', 'fleet-n1', async () => {
          await runningEverywhere('fleet-n1');
          mark('kill n1');
          await cluster.nodes[0]?.kill();
        });
        expect(results, context(results)).toEqual(everyRegister('n1 lost'));
        expect(executions(stores, 'fleet-n1')).toEqual(once());
      },
      SLOW_MS,
    );

    it(
      'finishes a job in a store whose WAN link drops mid-job and reports it when back',
      async () => {
        const s2 = stores[1] as TestStore;
        const results = await fleetJob('SLEEP 1000\nPRINT wan', 'fleet-wan', async () => {
          await runningEverywhere('fleet-wan');
          mark('cut s2 WAN');
          s2.cutWan();
          await until(
            () => s2.registers.every((r) => r.finished.has('fleet-wan')),
            's2 finished the job locally',
            30_000,
          );
          mark('restore s2 WAN');
          s2.restoreWan();
        });
        expect(results, context(results)).toEqual(everyRegister('wan'));
        expect(executions(stores, 'fleet-wan')).toEqual(once());
      },
      SLOW_MS,
    );

    it(
      'survives the SIGKILL of n3 (the head office controller node) mid-job after n1 rejoined',
      async () => {
        mark('start n1');
        await cluster.nodes[0]?.start();
        await cluster.ready(90_000);
        await allOnline();
        const results = await fleetJob('SLEEP 1500\nPRINT n3 lost', 'fleet-n3', async () => {
          await runningEverywhere('fleet-n3');
          mark('kill n3');
          await cluster.nodes[2]?.kill();
        });
        expect(results, context(results)).toEqual(everyRegister('n3 lost'));
        expect(executions(stores, 'fleet-n3')).toEqual(once());
      },
      2 * SLOW_MS,
    );
  },
);
