/**
 * A store on a three-node NATS JetStream cluster (docs/topology.md, "A NATS cluster"): six
 * registers (startDevice: REST, queue, bridge) spread over nodes n1 and n2 with `--mqtt-url`
 * lists, the store controller on n3. A job runs; n1 is killed with SIGKILL while it runs. Every
 * register FINISHED, no script ran twice, retained states and statuses are visible from the
 * surviving nodes, and n1 rejoins after a restart: the next job works and n1 serves the
 * retained set. Skipped only outside CI when nats-server is missing.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SubscribeRetry } from '../../bridge/contract/subscribe-retry.ts';
import { topics } from '../../bridge/contract/topics.ts';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { StoreController } from '../../controller/store-controller.ts';
import type { FanoutResult } from '../../controller/types.ts';
import { skipWithout } from '../support/binaries.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts';
import { until } from '../support/waits.ts';

const NS = 'stores/nats';
const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const DEVICE_IDS = ['reg-1', 'reg-2', 'reg-3', 'reg-4', 'reg-5', 'reg-6'];
/**
 * The node-loss steps wait for JetStream to elect new leaders: up to 22 s from sending to the
 * job's end on a quiet machine, more on a loaded one. JOB_DEADLINE_MS bounds one job through a
 * loss; SLOW_MS adds the wait for a quiet cluster before it.
 */
const JOB_DEADLINE_MS = 60_000;
const SLOW_MS = 120_000;
/** Longer than nats-server's JetStream request time-out (4 s), which ends in a closed connection. */
const QUIET_MS = 5000;
const quietLog = { warn: () => undefined, error: () => undefined };

interface ClusterDevice {
  id: string;
  device: RunningDevice;
  /** Task id -> how many times the queue started it. */
  started: Map<number, number>;
  /** requestId -> task ids queued for it (idempotency: one task per requestId). */
  requests: Map<string, number[]>;
}

describe.skipIf(skipWithout(['nats-server'], 'NATS cluster'))('a store on a three-node NATS cluster', () => {
  let cluster: NatsCluster;
  const devices: ClusterDevice[] = [];
  let controller: StoreController;
  /** The first job's results, the tasks the surviving nodes must still show. */
  let firstJob: { deviceId: string; taskId: number }[] = [];

  /** What the controller saw of the registers and of its own connection, for failure messages. */
  const timeline: string[] = [];
  const t0 = Date.now();
  const mark = (what: string): number => timeline.push(`+${Date.now() - t0} ms ${what}`);
  const failureContext = (results: readonly FanoutResult[]): string =>
    `results: ${JSON.stringify(results)}\nthe controller saw:\n${timeline.slice(-40).join('\n')}`;
  /** When the controller last saw a register go offline (its last will). */
  let lastOfflineAt = 0;
  const url = (d: ClusterDevice): string | undefined => d.device.bridge?.health().url;
  const connected = (d: ClusterDevice): boolean => d.device.bridge?.health().state === 'connected';

  beforeAll(async () => {
    cluster = await startNatsCluster();
    // Started together: each one's first SUBSCRIBEs create JetStream consumers, which takes a while.
    const started = await Promise.all(
      DEVICE_IDS.map(async (id, i) => {
        // Even registers start on n1, odd ones on n2; every list holds all three nodes.
        const config = parseServeConfig({
          port: 0,
          host: '127.0.0.1',
          auth: 'off',
          deviceId: id,
          ns: NS,
          mqttUrl: cluster.urlList(i % 2).join(','),
          mqttProtocol: '3.1.1',
          logLevel: 'silent',
        });
        const device = await startDevice(config, { logger: silent });
        const entry: ClusterDevice = { id, device, started: new Map(), requests: new Map() };
        device.queue.on('started', (task) =>
          entry.started.set(task.id, (entry.started.get(task.id) ?? 0) + 1),
        );
        device.queue.on('queued', (task) => {
          if (task.requestId === undefined) return;
          entry.requests.set(task.requestId, [...(entry.requests.get(task.requestId) ?? []), task.id]);
        });
        return entry;
      }),
    );
    devices.push(...started);
    controller = new StoreController({
      url: cluster.urlList(2),
      ns: NS,
      logger: silent,
      settleMs: 200,
      connectTimeoutMs: 20_000,
    });
    controller.on('device', (e) => {
      mark(`${e.deviceId} online=${e.online}`);
      if (!e.online) lastOfflineAt = Date.now();
    });
    controller.on('connection', (state) => mark(`controller ${state}`));
    await controller.start();
  }, 90_000);

  afterAll(async () => {
    await controller?.stop();
    await Promise.allSettled(devices.map((d) => d.device.stop()));
    await cluster?.stop();
  }, 30_000);

  it('replicates the MQTT streams on all three nodes', async () => {
    const streams = await cluster.mqttStreams();
    expect(Object.keys(streams).sort()).toEqual(
      expect.arrayContaining(['$MQTT_msgs', '$MQTT_rmsgs', '$MQTT_sess']),
    );
    for (const stream of ['$MQTT_msgs', '$MQTT_rmsgs', '$MQTT_sess'])
      expect(streams[stream]?.replicas).toBe(3);
  });

  it('connects the registers to n1 and n2 and shows all six online to the controller on n3', async () => {
    const [n1, n2] = cluster.nodes;
    expect(devices.map((d) => [d.id, connected(d), url(d)])).toEqual(
      devices.map((d, i) => [d.id, true, i % 2 === 0 ? n1?.mqttUrl : n2?.mqttUrl]),
    );
    await until(
      () => controller.devices().filter((e) => e.online).length === 6,
      'six registers online',
      20_000,
    );
  });

  /**
   * After a node loss or a rejoin, nats-server may still close registers' connections: a QoS 1
   * PUBLISH it cannot store holds the connection's read loop for its 4 s JetStream request
   * time-out, then closes the connection, and the will makes the register offline until it is
   * back a second later (docs/topology.md). The controller answers OFFLINE for a register it
   * knows offline when a job is sent, so a job starts once all six are online and none went
   * offline for longer than that time-out.
   */
  async function quietStore(): Promise<void> {
    await until(
      () =>
        devices.every(connected) &&
        controller.devices().filter((e) => e.online).length === 6 &&
        Date.now() - lastOfflineAt > QUIET_MS,
      `six registers connected, online at the controller, none offline for ${QUIET_MS} ms`,
      30_000,
    );
  }

  /** A job whose script runs 1.5 s; `node` is killed with SIGKILL once it runs on every register. */
  async function jobThroughNodeLoss(
    node: number,
    requestId: string,
  ): Promise<{ deviceId: string; taskId: number }[]> {
    await quietStore();
    const before = devices.map((d) => d.started.size);
    mark(`job ${requestId} sent`);
    const job = controller.submit(`SLEEP 1500\nPRINT ${requestId}`, {
      to: 'all',
      deadlineMs: JOB_DEADLINE_MS,
      requestId,
    });
    await until(
      () => devices.every((d, i) => d.started.size === (before[i] ?? 0) + 1),
      'the job running on every register',
      20_000,
    );
    mark(`kill ${cluster.nodes[node]?.name}`);
    await cluster.nodes[node]?.kill();
    const results = await job;
    expect(
      results.map((r) => [r.deviceId, r.status, r.status === 'FINISHED' && r.report]),
      failureContext(results),
    ).toEqual(DEVICE_IDS.map((id) => [id, 'FINISHED', requestId]));
    // Nothing ran twice: one task per requestId on every register, each started once.
    for (const d of devices) {
      expect(d.requests.get(requestId), d.id).toHaveLength(1);
      expect([...d.started.values()].every((count) => count === 1)).toBe(true);
    }
    return results.map((r) => ({ deviceId: r.deviceId, taskId: r.status === 'FINISHED' ? r.taskId : -1 }));
  }

  /**
   * A subscriber on `url` to `filters`, at QoS 0 like the controller: it reads retained messages,
   * and a QoS 1 SUBSCRIBE (a JetStream consumer) was refused for over 20 s at load 14 while the
   * cluster re-elected. Retried all the same (subscribe-retry.ts).
   */
  async function reader(url: string, filters: string[]): Promise<TestClient> {
    const client = await TestClient.connect(url, []);
    const refused = await new SubscribeRetry(client.client, quietLog).subscribe({
      filters,
      qos: 0,
      budgetMs: 20_000,
      alive: () => client.client.connected,
    });
    expect(refused).toEqual([]);
    return client;
  }

  it(
    'rides through the SIGKILL of n1 (a node of registers) mid-job: every register FINISHED, none twice',
    async () => {
      firstJob = await jobThroughNodeLoss(0, 'job-n1-lost');
      // The registers of n1 moved to another node of their list.
      await until(
        () => devices.every((d) => connected(d) && url(d) !== cluster.nodes[0]?.mqttUrl),
        'registers off n1',
        20_000,
      );
    },
    SLOW_MS,
  );

  /**
   * Every expectation is met by the retained messages a new subscription on `url` receives. A
   * node may have lost a retained store during the leader elections after the loss (nats-server
   * acknowledges it anyway) until the device's status audit or state check publishes it again
   * (docs/topology.md), so a reader that misses one reads again, within a bounded time.
   */
  async function retainedEventually(
    url: string,
    expected: { what: string; matches: (m: Received) => boolean }[],
    filters: string[],
    timeoutMs = 35_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const client = await reader(url, filters);
      try {
        const missing: string[] = [];
        for (const e of expected) {
          await client
            .waitFor((m) => m.retain && e.matches(m), e.what, 3000)
            .catch(() => missing.push(e.what));
        }
        if (missing.length === 0) return;
        if (Date.now() > deadline)
          throw new Error(`still not retained after ${timeoutMs} ms: ${missing.join('; ')}`);
      } finally {
        await client.close();
      }
    }
  }

  it(
    'keeps the retained states and statuses visible from both surviving nodes',
    async () => {
      for (const node of cluster.nodes.filter((n) => n.running)) {
        const expected = [
          ...devices.map((d) => ({
            what: `${node.name}: the retained online state of ${d.id}`,
            matches: (m: Received) =>
              m.topic === topics.state(NS, d.id) &&
              (m.json as { online?: boolean }).online === true &&
              (m.json as { bootId?: string }).bootId === d.device.bridge?.bootId,
          })),
          ...firstJob.map(({ deviceId, taskId }) => ({
            what: `${node.name}: the retained FINISHED status of ${deviceId} task ${taskId}`,
            matches: (m: Received) =>
              m.topic === topics.taskStatus(NS, deviceId, taskId) &&
              (m.json as { status?: string }).status === 'FINISHED',
          })),
        ];
        await retainedEventually(node.mqttUrl, expected, [topics.allStates(NS), topics.allTaskStatuses(NS)]);
      }
    },
    SLOW_MS,
  );

  it(
    'lets n1 rejoin after a restart: the cluster is healthy, n1 serves the retained states',
    async () => {
      mark('start n1');
      await cluster.nodes[0]?.start();
      await cluster.ready();
      const client = await reader(cluster.nodes[0]?.mqttUrl ?? '', [topics.allStates(NS)]);
      try {
        for (const d of devices) {
          await client.waitFor(
            (m) =>
              m.topic === topics.state(NS, d.id) &&
              (m.json as { bootId?: string; online?: boolean }).online === true &&
              (m.json as { bootId?: string }).bootId === d.device.bridge?.bootId,
            `n1: the online state of ${d.id}`,
          );
        }
      } finally {
        await client.close();
      }
    },
    SLOW_MS,
  );

  it(
    'rides through the SIGKILL of n3 (the node of the controller) mid-job; n3 rejoins',
    async () => {
      await jobThroughNodeLoss(2, 'job-n3-lost');
      await until(() => controller.connection === 'connected', 'the controller connected again', 20_000);
      mark('start n3');
      await cluster.nodes[2]?.start();
      await cluster.ready();
      // While n3 catches up, a node may close registers' connections (quietStore).
      await quietStore();
      const results = await controller.submit('PRINT after the rejoin', { to: 'all', deadlineMs: 20_000 });
      expect(
        results.map((r) => [r.deviceId, r.status]),
        failureContext(results),
      ).toEqual(DEVICE_IDS.map((id) => [id, 'FINISHED']));
    },
    // A job through the loss, a restart, the cluster's readiness and one more job: each step is
    // bounded above; together they can outlast SLOW_MS on a loaded machine.
    2 * SLOW_MS,
  );
});
