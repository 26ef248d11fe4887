/**
 * A three-node NATS JetStream cluster on free loopback ports (test/broker/nats-cluster.test.ts and the
 * bench's nats-cluster scenario), each node with its own generated
 * configuration, JetStream store directory and MQTT listener (docs/topology.md, "A NATS cluster").
 * Nodes can be killed with SIGKILL and started again on the same ports and store directory.
 * ready() waits until JetStream is healthy on every node (/healthz, before any node was killed)
 * and the MQTT streams exist and work: a QoS 1 subscription is granted and a retained message
 * is read back on every node.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { assertInstalled, program } from './installed.ts';
import { freePort } from './ports.ts';

export interface NatsNode {
  readonly name: string;
  /** MQTT listener, mqtt://127.0.0.1:<port>. */
  readonly mqttUrl: string;
  readonly monitorPort: number;
  readonly running: boolean;
  /** The process id while running (the bench reads its CPU time and RSS from /proc). */
  readonly pid: number | undefined;
  /** SIGKILL, then wait for the exit: a crash, nothing flushed. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and store directory (it rejoins the cluster). */
  start(): Promise<void>;
}

export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** Every node's MQTT URL starting with node `first`: a `--mqtt-url` list. */
  urlList(first: number): string[];
  /** JetStream healthy on every running node and the MQTT streams working (bounded wait). */
  ready(timeoutMs?: number): Promise<void>;
  /** The MQTT streams' replicas as seen by a running node: stream name -> replica count, all current. */
  mqttStreams(): Promise<Record<string, { replicas: number; current: boolean }>>;
  /** The last lines nodes wrote (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * One node's configuration: what the suite and the bench run on loopback, and what
 * docs/topology.md shows with host names (test/docs/topology-docs.test.ts compares the two).
 */
export function nodeConfig(input: {
  name: string;
  /** Address every listener binds (127.0.0.1 here). */
  host: string;
  dir: string;
  clientPort: number;
  clusterPort: number;
  mqttPort: number;
  monitorPort: number;
  /** Every node's cluster listener, `host:port`, this one included. */
  routes: string[];
  /** Extra lines of the `mqtt` block (the bench: `consumer_replicas: 1`); none by default. */
  mqtt?: readonly string[];
}): string {
  return [
    `server_name: ${input.name}`,
    `listen: ${input.host}:${input.clientPort}`,
    `http: ${input.host}:${input.monitorPort}`,
    `jetstream { store_dir: ${JSON.stringify(join(input.dir, 'jetstream'))} }`,
    'cluster {',
    '  name: regbridge',
    `  listen: ${input.host}:${input.clusterPort}`,
    `  routes: [${input.routes.map((route) => `nats-route://${route}`).join(', ')}]`,
    '}',
    'mqtt {',
    `  listen: ${input.host}:${input.mqttPort}`,
    ...(input.mqtt ?? []).map((line) => `  ${line}`),
    '}',
    '',
  ].join('\n');
}

class Node implements NatsNode {
  private child: ChildProcess | undefined;
  private log = '';

  constructor(
    readonly name: string,
    private readonly config: string,
    private readonly mqttPort: number,
    readonly monitorPort: number,
  ) {}

  get mqttUrl(): string {
    return `mqtt://127.0.0.1:${this.mqttPort}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get lastLines(): string {
    return this.log;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const child = spawn(program('nats-server'), ['-c', this.config], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-6000);
    });
    child.on('error', (error) => {
      this.log += `\nspawn error: ${error.message}`;
    });
    this.child = child;
    await this.monitor('/varz', 15_000);
  }

  /** Killed at least once (ready() then skips /healthz). */
  wasKilled = false;

  async kill(): Promise<void> {
    this.wasKilled = true;
    await this.end('SIGKILL');
  }

  async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
  }

  /** GET on the monitoring port until it answers 200 (bounded); the JSON body. */
  async monitor(path: string, timeoutMs: number): Promise<unknown> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${this.monitorPort}${path}`);
        const text = await response.text();
        if (response.ok) return JSON.parse(text);
        last = `${response.status} ${text}`;
      } catch (error) {
        last = (error as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`${this.name} ${path}: ${last}\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * One probe round may take this long. nats-server may close a CONNECT without CONNACK while it
 * re-creates its consumers after a restart, or leave a PUBLISH or SUBSCRIBE unanswered; a round
 * that hangs is a failed round, and ready() tries again until its deadline.
 */
const PROBE_MS = 15_000;

/** One MQTT round on every running node: subscribe QoS 1 (granted), publish retained, read it back. */
async function mqttProbe(nodes: readonly Node[], round: number): Promise<string | undefined> {
  const clients: { list: MqttClient[]; ended: boolean } = { list: [], ended: false };
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`probe round ${round} unanswered after ${PROBE_MS} ms`), PROBE_MS);
  });
  try {
    return await Promise.race([probeRound(nodes, round, clients), hung]);
  } finally {
    clearTimeout(timer);
    clients.ended = true;
    await Promise.all(clients.list.map((c) => c.endAsync(true).catch(() => undefined)));
  }
}

async function probeRound(
  nodes: readonly Node[],
  round: number,
  clients: { list: MqttClient[]; ended: boolean },
): Promise<string | undefined> {
  const topic = `regbridge-probe/${round}`;
  const running = nodes.filter((n) => n.running);
  try {
    for (const node of running) {
      // allowRetries false: a connection closed before CONNACK rejects instead of waiting for ever.
      const client = await connectAsync(
        node.mqttUrl,
        { clean: true, reconnectPeriod: 0, connectTimeout: 5000 },
        false,
      );
      if (clients.ended) {
        await client.endAsync(true);
        return 'probe round over';
      }
      clients.list.push(client);
    }
    const first = clients.list[0];
    if (!first) return 'no node running';
    await first.publishAsync(topic, `probe ${round}`, { qos: 1, retain: true });
    for (const [index, client] of clients.list.entries()) {
      const seen = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 3000);
        client.on('message', (t) => {
          if (t !== topic) return;
          clearTimeout(timer);
          resolve(true);
        });
      });
      const granted = await client.subscribeAsync(topic, { qos: 1 });
      if (granted.some((g) => g.qos === 128)) return `${running[index]?.name}: subscription refused`;
      if (!(await seen)) return `${running[index]?.name}: retained probe not read back`;
    }
    await first.publishAsync(topic, '', { qos: 1, retain: true });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** nats-server must be on PATH (Debian: /usr/sbin); fails at once, naming it, when it is not. */
export async function startNatsCluster(
  size = 3,
  mqtt: readonly string[] = [],
  options: {
    /**
     * Runs once every node is up, before any MQTT client (the readiness probe included) connects,
     * with the nodes' NATS client ports: the bench creates `$MQTT_msgs` its own way there.
     */
    beforeMqtt?: (clientPorts: number[]) => Promise<void>;
  } = {},
): Promise<NatsCluster> {
  assertInstalled('nats-server');
  const dir = await mkdtemp(join(tmpdir(), 'regbridge-nats-cluster-'));
  const ports = [];
  for (let i = 0; i < size; i++) {
    ports.push({
      client: await freePort(),
      cluster: await freePort(),
      mqtt: await freePort(),
      monitor: await freePort(),
    });
  }
  const nodes: Node[] = [];
  for (const [i, p] of ports.entries()) {
    const name = `n${i + 1}`;
    const nodeDir = join(dir, name);
    await mkdir(nodeDir, { recursive: true });
    const config = join(nodeDir, 'nats.conf');
    await writeFile(
      config,
      nodeConfig({
        name,
        host: '127.0.0.1',
        dir: nodeDir,
        clientPort: p.client,
        clusterPort: p.cluster,
        mqttPort: p.mqtt,
        monitorPort: p.monitor,
        routes: ports.map((q) => `127.0.0.1:${q.cluster}`),
        mqtt,
      }),
    );
    nodes.push(new Node(name, config, p.mqtt, p.monitor));
  }
  let round = 0;
  const cluster: NatsCluster = {
    nodes,
    urlList: (first) => nodes.map((_, i) => (nodes[(first + i) % nodes.length] as Node).mqttUrl),
    async ready(timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      // /healthz only while nothing was ever killed: after a node loss it answers 503 for as long
      // as any consumer, even one of a session that has ended, is not current on that node,
      // which outlasts the suite's patience; the MQTT round trip below is what clients need.
      if (!nodes.some((n) => n.wasKilled)) {
        for (const node of nodes.filter((n) => n.running)) {
          await node.monitor('/healthz', Math.max(1, deadline - Date.now()));
        }
      }
      let problem: string | undefined = 'not probed';
      while (problem !== undefined) {
        round += 1;
        problem = await mqttProbe(nodes, round);
        if (problem === undefined) return;
        if (Date.now() > deadline) throw new Error(`NATS cluster not ready: ${problem}\n${cluster.logs()}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    async mqttStreams() {
      const node = nodes.find((n) => n.running);
      if (!node) throw new Error('no node running');
      const jsz = (await node.monitor('/jsz?accounts=true&streams=true', 5000)) as {
        account_details?: {
          stream_detail?: { name: string; cluster?: { replicas?: { current: boolean }[] } }[];
        }[];
      };
      const result: Record<string, { replicas: number; current: boolean }> = {};
      for (const account of jsz.account_details ?? []) {
        for (const stream of account.stream_detail ?? []) {
          if (!stream.name.startsWith('$MQTT_')) continue;
          const peers = stream.cluster?.replicas ?? [];
          result[stream.name] = { replicas: peers.length + 1, current: peers.every((p) => p.current) };
        }
      }
      return result;
    },
    logs: () => nodes.map((n) => `--- ${n.name}\n${n.lastLines.slice(-1500)}`).join('\n'),
    async stop() {
      await Promise.all(nodes.map((n) => n.end('SIGTERM')));
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    await options.beforeMqtt?.(ports.map((p) => p.client));
    await cluster.ready();
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}
