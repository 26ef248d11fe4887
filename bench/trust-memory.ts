/**
 * Memory an attacker can make the store broker hold (issue 26 items 4 and 8; docs/security.md,
 * "A register speaks only for itself"). Each case starts `regbridge broker` as a child process,
 * reads its RSS (/proc/<pid>/status VmRSS) once its listeners are up and again after the attack,
 * and prints the growth, `--runs` times (default 3) with the defaults and with the bound raised
 * out of reach (what the broker did before the bound existed):
 *
 *   ws-frames       6 WebSocket connections, each sending one 100 MiB binary frame (no CONNECT)
 *   retained        a device user publishes 300 retained task statuses with 1 MiB reports
 *                   (bound: --max-retained-statuses; the default, 1144, is above 300, so this
 *                   case runs with 100 to show the bound, and says so)
 *   qos2-unreleased a device user sends 300 QoS 2 PUBLISHes of 1 MiB and never sends PUBREL
 *   controller-retained   the controller service's RSS (a `regbridge controller` child process
 *                   connected to the broker, which subscribes to every status) while the device
 *                   publishes the `retained` case's 300 statuses, with the same broker flags
 *   controller-version    the controller's RSS while the device publishes 300 states with a
 *                   1 MiB `version` (the bound is not a flag: no "bound raised" run)
 *
 * Run: node bin/run-ts.js bench/trust-memory.ts [--runs N] [--case NAME]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Socket, connect as tcpConnect } from 'node:net';
import { type MqttClient, connect as mqttConnect } from 'mqtt';
import { deviceClientId } from '../bridge/contract/topics.ts';
import { connect as rawConnect, publish as rawPublish } from '../test/support/raw-mqtt.ts';
import {
  type BenchController,
  CONTROLLER_USER,
  startController,
  stopController,
  untilRow,
} from './lib/trust-controller.ts';

const MiB = 1024 * 1024;
const ns = 'bench/trust';
const device = { name: 'till-1', password: 'till-1-password' };

function rssMiB(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

async function startBroker(extra: string[]): Promise<{ child: ChildProcess; tcp: number; ws: number }> {
  const child = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      'broker',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--ws-port',
      '0',
      '--ns',
      ns,
      '--log-level',
      'error',
      ...extra,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        REGBRIDGE_USER: `${device.name}:${device.password}:device,${CONTROLLER_USER.name}:${CONTROLLER_USER.password}:controller`,
      },
    },
  );
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const tcp = /listening on mqtt:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
    const ws = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
    if (tcp && ws) return { child, tcp: Number(tcp), ws: Number(ws) };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`broker did not start: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopBroker(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
}

/** One WebSocket sending a `size`-byte binary frame; resolves when written or closed by the broker. */
function wsFrame(port: number, size: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    let upgraded = false;
    socket.on('error', () => resolve('error'));
    socket.on('close', () => resolve(upgraded ? 'closed by the broker' : 'closed before upgrade'));
    socket.once('data', async () => {
      upgraded = true;
      // FIN + binary, masked, 64-bit length; a zero mask leaves the payload as sent.
      const header = Buffer.alloc(14);
      header[0] = 0x82;
      header[1] = 0x80 | 127;
      header.writeBigUInt64BE(BigInt(size), 2);
      socket.write(header);
      const chunk = Buffer.alloc(MiB);
      for (let sent = 0; sent < size && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk)) await drained(socket);
      }
      resolve('frame written');
    });
    socket.write(
      `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
        'Sec-WebSocket-Protocol: mqtt\r\n\r\n',
    );
  });
}

/** Until `socket` drains or closes, leaving no listener behind. */
function drained(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

function status(id: number): string {
  return JSON.stringify({
    id,
    deviceId: device.name,
    bootId: 'bench',
    seq: id,
    status: 'FINISHED',
    report: 'x'.repeat(MiB - 1024),
    queuedAt: '2026-01-05T08:01:00.000Z',
    startedAt: '2026-01-05T08:01:00.001Z',
    finishedAt: '2026-01-05T08:01:00.040Z',
  });
}

function state(version: string): string {
  return JSON.stringify({
    online: true,
    deviceId: device.name,
    bootId: 'bench',
    installation: 'cash-register',
    version,
    startedAt: '2026-01-05T08:00:00.000Z',
    groups: [],
  });
}

async function deviceClient(port: number): Promise<MqttClient> {
  const client = mqttConnect(`mqtt://127.0.0.1:${port}`, {
    clientId: deviceClientId(ns, device.name),
    username: device.name,
    password: device.password,
    reconnectPeriod: 0,
  });
  await new Promise<void>((resolve, reject) => client.once('connect', () => resolve()).once('error', reject));
  return client;
}

/** The device's online state (version `version`), so the controller lists it. */
async function announce(port: number, version: string): Promise<void> {
  const client = await deviceClient(port);
  await client.publishAsync(`${ns}/devices/${device.name}/state`, state(version), { qos: 1, retain: true });
  await client.endAsync();
}

/** 300 states with a 1 MiB `version`, then one with `after`: the controller has seen all when it shows that. */
async function hugeVersions(port: number): Promise<string> {
  const client = await deviceClient(port);
  const huge = state('v'.repeat(MiB));
  for (let i = 1; i <= 300; i += 1) {
    await client.publishAsync(`${ns}/devices/${device.name}/state`, huge, { qos: 1, retain: true });
  }
  await client.publishAsync(`${ns}/devices/${device.name}/state`, state('after'), { qos: 1, retain: true });
  await client.endAsync();
  return '300 published';
}

async function retained(port: number): Promise<string> {
  const client = await deviceClient(port);
  for (let i = 1; i <= 300; i += 1) {
    await client.publishAsync(`${ns}/devices/${device.name}/tasks/${i}/status`, status(i), {
      qos: 1,
      retain: true,
    });
  }
  await client.endAsync();
  return '300 published';
}

async function qos2Unreleased(port: number): Promise<string> {
  const socket: Socket = tcpConnect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let closed = false;
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  socket.resume();
  socket.write(
    rawConnect({
      clientId: deviceClientId(ns, device.name),
      username: device.name,
      password: device.password,
    }),
  );
  const payload = Buffer.alloc(MiB, 'y');
  let sent = 0;
  for (let id = 1; id <= 300 && !closed; id += 1) {
    const ok = socket.write(
      rawPublish({ topic: `${ns}/devices/${device.name}/tasks/${id}/status`, payload, qos: 2, id }),
    );
    sent += 1;
    if (!ok) await drained(socket);
  }
  // Whatever the broker reads of what was written: give it a moment to parse the tail.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const result = closed
    ? `connection closed by the broker (${sent} written)`
    : `${sent} held, never released`;
  return result;
}

/** Runs `attack` with a controller connected; the controller's RSS growth once `seen` holds. */
async function onController(
  broker: { tcp: number },
  attack: (port: number) => Promise<string>,
  seen: (row: { version?: string; lastTask?: { id: number } } | undefined) => boolean,
): Promise<{ outcome: string; growth: number }> {
  await announce(broker.tcp, 'before');
  const controller: BenchController = await startController(ns, broker.tcp);
  try {
    await untilRow(controller, device.name, (row) => row?.version === 'before');
    const before = rssMiB(controller.child.pid!);
    const outcome = await attack(broker.tcp);
    const row = await untilRow(controller, device.name, seen);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const growth = rssMiB(controller.child.pid!) - before;
    return {
      outcome: `${outcome}; controller saw task ${row?.lastTask?.id ?? '-'}, version ${row?.version?.length ?? 0} chars`,
      growth,
    };
  } finally {
    await stopController(controller);
  }
}

/** The newest task id the controller should see: the broker drops statuses beyond its cap. */
const lastKept = (flags: readonly string[]): number => Math.min(300, Number(flags[1]));

const CASES: Record<
  string,
  {
    bounded: string[];
    unbounded?: string[];
    attack: (
      b: { tcp: number; ws: number },
      flags: readonly string[],
    ) => Promise<string | { outcome: string; growth: number }>;
  }
> = {
  'ws-frames': {
    bounded: [] as string[],
    unbounded: ['--max-packet-bytes', String(110 * MiB)],
    attack: async (b: { ws: number }) =>
      (await Promise.all(Array.from({ length: 6 }, () => wsFrame(b.ws, 100 * MiB)))).join(', '),
  },
  retained: {
    bounded: ['--max-retained-statuses', '100'],
    unbounded: ['--max-retained-statuses', '100000'],
    attack: (b: { tcp: number }) => retained(b.tcp),
  },
  'qos2-unreleased': {
    bounded: [] as string[],
    unbounded: ['--max-awaiting-pubrel', '65535'],
    attack: (b: { tcp: number }) => qos2Unreleased(b.tcp),
  },
  'controller-retained': {
    bounded: ['--max-retained-statuses', '100'],
    unbounded: ['--max-retained-statuses', '100000'],
    attack: (b, flags) => onController(b, retained, (row) => row?.lastTask?.id === lastKept(flags)),
  },
  'controller-version': {
    bounded: [],
    attack: (b) => onController(b, hugeVersions, (row) => row?.version === 'after'),
  },
};

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3) || 3;
const only = args.includes('--case') ? args[args.indexOf('--case') + 1] : undefined;

for (const [name, spec] of Object.entries(CASES)) {
  if (only && only !== name) continue;
  const variants: [string, string[]][] = [['bounded (defaults)', spec.bounded]];
  if (spec.unbounded) variants.push(['bound raised (as before)', spec.unbounded]);
  for (const [label, flags] of variants) {
    const growth: number[] = [];
    let outcome = '';
    for (let run = 0; run < runs; run += 1) {
      const broker = await startBroker(flags);
      try {
        const before = rssMiB(broker.child.pid!);
        const result = await spec.attack(broker, flags);
        if (typeof result === 'string') {
          outcome = result;
          await new Promise((resolve) => setTimeout(resolve, 500));
          growth.push(rssMiB(broker.child.pid!) - before);
        } else {
          outcome = result.outcome;
          growth.push(result.growth);
        }
      } finally {
        await stopBroker(broker.child);
      }
    }
    const sorted = [...growth].sort((a, b) => a - b);
    console.log(
      `${name} | ${label} ${flags.join(' ')} | RSS growth MiB: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)}, ` +
        `range ${sorted[0]!.toFixed(0)}-${sorted.at(-1)!.toFixed(0)} (${runs} runs) | ${outcome}`,
    );
  }
}
