/**
 * The client side of the status latency scenario, in a process of its own (as a store
 * controller or vendor client would be). It stamps the moment it learns that a task FINISHED,
 * with performance.timeOrigin + performance.now(), and sends `{type: 'seen', deviceId, id, t}`.
 * Modes (argv[2]): `mqtt <url> <user> <password> <ns>`: subscribed to every task status;
 * `longpoll <port> <user> <password>`: `GET /api/tasks/{id}?waitMs=30000` once told the id;
 * `poll <port> <user> <password> <intervalMs>`: polls every interval, starting at a random phase.
 */
import { connect, type MqttClient } from 'mqtt';
import { DeviceClient } from '../../src/client/index.ts';
import type { WorkerMessage } from '../lib/proc.ts';
import { nowMs, sleep } from '../lib/scenario.ts';

import { sendToParent, workerMain } from '../lib/worker-side.ts';

const [mode = '', ...rest] = process.argv.slice(2);
let mqttClient: MqttClient | undefined;
let rest_: DeviceClient | undefined;
let stopped = false;

async function startMqtt(url: string, username: string, password: string, ns: string): Promise<void> {
  const client = connect(url, {
    username,
    password,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    clientId: `bench-observer-${process.pid}`,
  });
  mqttClient = client;
  client.on('message', (topic, payload) => {
    const t = nowMs();
    // Zero-byte retained messages clear evicted tasks' topics (docs/mqtt.md).
    if (payload.length === 0) return;
    const message = JSON.parse(payload.toString('utf8')) as { id: number; deviceId: string; status: string };
    if (message.status === 'FINISHED')
      sendToParent({ type: 'seen', deviceId: message.deviceId, id: message.id, t, topic });
  });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  await client.subscribeAsync(`${ns}/devices/+/tasks/+/status`, { qos: 1 });
}

async function longPoll(id: number): Promise<void> {
  for (;;) {
    const task = await rest_!.getTaskStatus(id, { waitMs: 30_000 });
    if (task.status === 'FINISHED') {
      sendToParent({ type: 'seen', id, t: nowMs() });
      return;
    }
    if (task.status !== 'RUNNING' || stopped) throw new Error(`task ${id} is ${task.status}`);
  }
}

/** The vendor flow: ask every interval; the phase against the task's end is unknown, so random. */
async function poll(id: number, intervalMs: number): Promise<void> {
  await sleep(Math.random() * intervalMs);
  for (;;) {
    const task = await rest_!.getTaskStatus(id);
    if (task.status === 'FINISHED') {
      sendToParent({ type: 'seen', id, t: nowMs() });
      return;
    }
    if (task.status !== 'RUNNING' || stopped) throw new Error(`task ${id} is ${task.status}`);
    await sleep(intervalMs);
  }
}

workerMain(
  async () => {
    if (mode === 'mqtt') {
      const [url, user, password, ns] = rest;
      await startMqtt(url!, user!, password!, ns!);
    } else if (mode === 'longpoll' || mode === 'poll') {
      const [port, user, password] = rest;
      rest_ = new DeviceClient('127.0.0.1', Number(port), user!, password!, { connections: 16 });
      await rest_.authenticate();
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
    sendToParent({ type: 'ready' });
  },
  {
    onMessage: async (message: WorkerMessage) => {
      if (message.type === 'ping') sendToParent({ type: 'pong', t0: message.t0, t1: nowMs() });
      else if (message.type === 'watch' && mode === 'longpoll') await longPoll(message.id as number);
      else if (message.type === 'watch' && mode === 'poll') await poll(message.id as number, Number(rest[3]));
    },
    onStop: async () => {
      stopped = true;
      await mqttClient?.endAsync();
      await rest_?.close();
    },
  },
);
