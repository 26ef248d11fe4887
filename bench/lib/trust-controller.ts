/**
 * The controller side of bench/trust-memory.ts: a `regbridge controller` child process connected
 * to the bench's broker (as its controller user), whose RSS is read before and after a register's
 * attack, once the controller has taken in what the broker passed on (GET /api/devices shows the
 * register's newest task, or its state, as the attack left it).
 */
import { type ChildProcess, spawn } from 'node:child_process';

export const CONTROLLER_USER = { name: 'hq', password: 'hq-bench-password' };
const ADMIN = { name: 'admin', password: 'admin-bench-password' };

export interface BenchController {
  child: ChildProcess;
  http: number;
  token: string;
}

export async function startController(ns: string, mqttPort: number): Promise<BenchController> {
  const child = spawn(
    process.execPath,
    [
      'bin/regbridge.js',
      'controller',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--mqtt-url',
      `mqtt://127.0.0.1:${mqttPort}`,
      '--ns',
      ns,
      '--db',
      ':memory:',
      '--log-level',
      'error',
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        REGBRIDGE_MQTT_USER: `${CONTROLLER_USER.name}:${CONTROLLER_USER.password}`,
        REGBRIDGE_USER: `${ADMIN.name}:${ADMIN.password}:admin`,
      },
    },
  );
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const deadline = Date.now() + 30_000;
  let http: number | undefined;
  while (http === undefined) {
    http = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]) || undefined;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`controller did not start: ${out}`);
    if (http === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const response = await fetch(`http://127.0.0.1:${http}/api/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userName: ADMIN.name, password: ADMIN.password }),
  });
  const { token } = (await response.json()) as { token: string };
  return { child, http, token };
}

interface DeviceRow {
  deviceId: string;
  version?: string;
  lastTask?: { id: number };
}

/** The register's row in GET /api/devices, or undefined while the controller does not know it. */
export async function deviceRow(
  controller: BenchController,
  deviceId: string,
): Promise<DeviceRow | undefined> {
  const response = await fetch(`http://127.0.0.1:${controller.http}/api/devices`, {
    headers: { authorization: `Bearer ${controller.token}` },
  });
  const body = (await response.json()) as { devices?: DeviceRow[] } | DeviceRow[];
  const rows = Array.isArray(body) ? body : (body.devices ?? []);
  return rows.find((row) => row.deviceId === deviceId);
}

/** Until `done` holds for the register's row (at most 60 s); what it saw last. */
export async function untilRow(
  controller: BenchController,
  deviceId: string,
  done: (row: DeviceRow | undefined) => boolean,
): Promise<DeviceRow | undefined> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const row = await deviceRow(controller, deviceId);
    if (done(row) || Date.now() > deadline) return row;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function stopController(controller: BenchController): Promise<void> {
  controller.child.kill('SIGKILL');
  if (controller.child.exitCode === null)
    await new Promise((resolve) => controller.child.once('exit', resolve));
}
