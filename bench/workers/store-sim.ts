/**
 * Light simulated stores for the head-office scenario (bench/scenarios/head-office.ts). Each
 * store is one MQTT client at the hub per connection of its Mosquitto bridge
 * (bridgeConnections, cli/store-config.ts), standing where that connection would: its client id,
 * persistent session (clean false), QoS 1 subscriptions to exactly its head-office-to-store
 * topics, and every node of the hub in its server list (failover like the bridge's `address`
 * list, starting on a node chosen per store). Behind them stand `registers` simulated registers:
 * no store broker, no register processes, no scripts run. For each register a script reaches
 * (its device topic, or group `all`), the store publishes what the register would have sent up
 * through the bridge: the reply and three statuses (queued, started, FINISHED), each on the
 * connection whose `out` topics carry it at that topic's QoS (replies 0, statuses 1), retained only where that connection keeps the
 * flag; with a register's idempotency (a requestId seen before republishes the end status, runs
 * nothing; counted as `repeats`).
 * argv: `<firstStore> <endStore> <registers> <url,url,url>`. Sends `ready` once every store is
 * connected, subscribed and has published its registers' retained online states; answers
 * `count` with `{executions, repeats, cpuMs}` (its CPU time since it started).
 */
import { randomUUID } from 'node:crypto';
import { connectAsync, type MqttClient } from 'mqtt';
import { SubscribeRetry } from '../../bridge/contract/subscribe-retry.ts';
import { topicMatches } from '../../broker/access-rules.ts';
import { bridgeConnections } from '../../cli/store-config.ts';
import { silent as quiet } from '../../test/support/loggers.ts';
import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [first = '0', end = '0', perStore = '20', urlList = ''] = process.argv.slice(2);
const servers = urlList.split(',').map((u) => {
  const url = new URL(u);
  return { host: url.hostname, port: Number(url.port) };
});
const clients: MqttClient[] = [];
let executions = 0;
let repeats = 0;

export const storeId = (index: number): string => `s${String(index).padStart(3, '0')}`;

interface SimTask {
  id: number;
  seq: number;
  last: string;
}

async function startStore(index: number): Promise<MqttClient[]> {
  const store = storeId(index);
  const ns = `stores/${store}`;
  const bootId = randomUUID();
  const now = new Date().toISOString();
  const devices = Array.from({ length: Number(perStore) }, (_, i) => `reg-${String(i + 1).padStart(2, '0')}`);
  const tasks = new Map<string, Map<string, SimTask>>(devices.map((d) => [d, new Map()]));
  let nextTask = 1;
  const rotated = servers.map((_, i) => servers[(index + i) % servers.length]!);
  const connections = bridgeConnections(ns, `store-${store}`);
  const links = await Promise.all(
    connections.map(async (c) => {
      const client = await connectAsync({
        servers: rotated,
        clientId: c.clientId,
        clean: false,
        protocolVersion: 4,
        reconnectPeriod: 1000,
        connectTimeout: 30_000,
        keepalive: 30,
      });
      client.on('error', () => undefined);
      return client;
    }),
  );
  const route = new Map<string, { client: MqttClient; retain: boolean; qos: 0 | 1 }>();
  const via = (topic: string): { client: MqttClient; retain: boolean; qos: 0 | 1 } => {
    // The register retains it at the store; the bridge connection decides whether the hub does.
    const kind = topic.split('/')[4] ?? '';
    let found = route.get(kind);
    if (!found) {
      const i = connections.findIndex((c) => c.out.some((f) => topicMatches(f.filter, topic)));
      if (i < 0) throw new Error(`no bridge connection sends ${topic} up`);
      const { qos } = connections[i]!.out.find((f) => topicMatches(f.filter, topic))!;
      found = { client: links[i]!, retain: connections[i]!.retain, qos };
      route.set(kind, found);
    }
    return found;
  };
  const publish = (topic: string, payload: string, retain: boolean): void => {
    const { client, retain: keeps, qos } = via(topic);
    client.publish(topic, payload, { qos, retain: retain && keeps }, () => undefined);
  };
  const run = (deviceId: string, requestId: string, script: string): void => {
    const held = tasks.get(deviceId);
    if (!held) return;
    const known = held.get(requestId);
    const replyTopic = `${ns}/devices/${deviceId}/replies/${requestId}`;
    if (known) {
      repeats += 1;
      publish(replyTopic, JSON.stringify({ requestId, deviceId, id: known.id, status: 'FINISHED' }), false);
      publish(`${ns}/devices/${deviceId}/tasks/${known.id}/status`, known.last, true);
      return;
    }
    executions += 1;
    const id = nextTask++;
    const statusTopic = `${ns}/devices/${deviceId}/tasks/${id}/status`;
    const at = new Date().toISOString();
    const base = { id, deviceId, bootId, requestId, queuedAt: at };
    publish(replyTopic, JSON.stringify({ requestId, deviceId, id, status: 'RUNNING' }), false);
    publish(statusTopic, JSON.stringify({ ...base, seq: 1, status: 'RUNNING' }), true);
    publish(statusTopic, JSON.stringify({ ...base, seq: 2, status: 'RUNNING', startedAt: at }), true);
    const last = JSON.stringify({
      ...base,
      seq: 3,
      status: 'FINISHED',
      report: `ran ${script.length} bytes`,
      startedAt: at,
      finishedAt: at,
    });
    held.set(requestId, { id, seq: 3, last });
    publish(statusTopic, last, true);
  };
  const onMessage = (topic: string, payload: Buffer): void => {
    let body: { script?: string; requestId?: string };
    try {
      body = JSON.parse(payload.toString()) as typeof body;
    } catch {
      return;
    }
    if (typeof body.script !== 'string' || typeof body.requestId !== 'string') return;
    const levels = topic.split('/');
    const kind = levels[2];
    if (levels[4] !== 'scripts') return;
    const targets = kind === 'groups' ? (levels[3] === 'all' ? devices : []) : [levels[3] ?? ''];
    for (const deviceId of targets) run(deviceId, body.requestId, body.script);
  };
  for (const [i, c] of connections.entries()) {
    const client = links[i]!;
    client.on('message', onMessage);
    if (c.in.length === 0) continue;
    // nats-server refuses SUBSCRIBEs for a while when many consumers are created at once: sent
    // again with backoff, as the controller and the registers do.
    const refused = await new SubscribeRetry(client, quiet).subscribe({
      filters: c.in,
      qos: 1,
      budgetMs: 300_000,
      alive: () => client.connected,
    });
    if (refused.length > 0)
      throw new Error(`store ${store}: subscriptions refused for 300 s: ${refused.join(', ')}`);
  }
  for (const deviceId of devices) {
    const state = {
      online: true,
      deviceId,
      bootId,
      installation: 'cash-register',
      version: 'store-sim',
      startedAt: now,
      groups: [],
    };
    const topic = `${ns}/devices/${deviceId}/state`;
    const { client, retain } = via(topic);
    await client.publishAsync(topic, JSON.stringify(state), { qos: 1, retain });
  }
  return links;
}

workerMain(
  async () => {
    const indexes = Array.from({ length: Number(end) - Number(first) }, (_, i) => Number(first) + i);
    // A few at a time: each new session creates JetStream consumers on every node.
    for (let i = 0; i < indexes.length; i += 10) {
      clients.push(...(await Promise.all(indexes.slice(i, i + 10).map(startStore))).flat());
    }
    sendToParent({ type: 'ready' });
  },
  {
    onMessage: (message) => {
      if (message.type === 'count') {
        const cpu = process.cpuUsage();
        sendToParent({ type: 'count', executions, repeats, cpuMs: (cpu.user + cpu.system) / 1000 });
      }
    },
    onStop: async () => {
      await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
    },
  },
);
