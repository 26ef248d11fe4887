import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SERVE_ON_FREE_PORTS,
  serveBanner,
  startCli,
  stopAll,
  stopCli,
  waitForOutput,
} from '../support/cli-process.ts';
import { jsonOf, TestClient } from '../support/mqtt.ts';

function postJson(url: string, body: unknown, token?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
}

afterEach(stopAll);

describe('regbridge serve', () => {
  it('starts a device with its embedded broker that REST and MQTT clients can use with the printed credentials', async () => {
    const serve = startCli([...SERVE_ON_FREE_PORTS, '--device-id', 'cli-1']);
    const { httpPort, brokerPort, password } = await serveBanner(serve);
    const base = `http://127.0.0.1:${httpPort}`;

    const mqtt = await TestClient.connect(`mqtt://127.0.0.1:${brokerPort}`, ['pos/#'], {
      username: 'admin',
      password,
    });
    const state = await mqtt.waitFor((m) => m.topic === 'pos/devices/cli-1/state', 'online state');
    expect(jsonOf(state)).toMatchObject({ online: true, deviceId: 'cli-1', groups: ['all'] });

    const auth = await postJson(`${base}/api/authenticate`, { userName: 'admin', password });
    expect(auth.status).toBe(200);
    const { token } = (await auth.json()) as { token: string };
    const submitted = await postJson(`${base}/api/vendor-script`, { vendorScript: 'PRINT from rest' }, token);
    expect(submitted.status).toBe(202);
    const { id } = (await submitted.json()) as { id: number };
    const finished = await mqtt.waitFor(
      (m) => m.topic === `pos/devices/cli-1/tasks/${id}/status` && jsonOf(m).status === 'FINISHED',
      'REST task mirrored',
    );
    expect(jsonOf(finished)).toMatchObject({ id, deviceId: 'cli-1', report: 'from rest' });

    await mqtt.publish(
      'pos/groups/all/scripts',
      JSON.stringify({ script: 'PRINT from mqtt', requestId: 'cli-r1' }),
    );
    const viaMqtt = await mqtt.waitFor(
      (m) =>
        m.topic.startsWith('pos/devices/cli-1/tasks/') &&
        jsonOf(m).requestId === 'cli-r1' &&
        jsonOf(m).status === 'FINISHED',
      'MQTT task finished',
    );
    const task = (await (
      await fetch(`${base}/api/tasks/${jsonOf(viaMqtt).id}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { status: string; report: string };
    expect(task).toMatchObject({ status: 'FINISHED', report: 'from mqtt' });

    // /metrics counts what the bridge published and took in (issue: messages in and out).
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const counter = (name: string, kind: string): number => {
      const line = metrics.split('\n').find((l) => l.startsWith(name) && l.includes(`kind="${kind}"`));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    expect(counter('regbridge_mqtt_messages_out_total', 'state')).toBeGreaterThanOrEqual(1);
    expect(counter('regbridge_mqtt_messages_out_total', 'status')).toBeGreaterThanOrEqual(6);
    expect(metrics).toMatch(/regbridge_mqtt_messages_in_total\{[^}]*\} [1-9]/);
    expect(metrics).toMatch(/regbridge_tasks_total\{[^}]*status="FINISHED"[^}]*\} 2/);

    const offline = mqtt.waitFor(
      (m) => m.topic === 'pos/devices/cli-1/state' && jsonOf(m).online === false,
      'offline state on shutdown',
    );
    serve.child.kill('SIGTERM');
    expect(jsonOf(await offline)).toMatchObject({ online: false, deviceId: 'cli-1' });
    expect((await serve.exit).code).toBe(0);
    await mqtt.close();
    expect(serve.stdout()).not.toContain(`"${password}"`);
    // The password is printed once, on the human line, and never inside a JSON log line.
    expect(
      serve
        .stdout()
        .split('\n')
        .filter((line) => line.includes(password)),
    ).toHaveLength(1);
  });

  it('reports every configuration problem at once and exits 2 without a stack trace', async () => {
    const serve = startCli([
      'serve',
      '--port',
      'x',
      '--retain',
      '0',
      '--executor',
      'command',
      '--device-id',
      'a/b',
    ]);
    expect((await serve.exit).code).toBe(2);
    const err = serve.stderr();
    for (const flag of ['--port', '--retain', '--command', '--device-id']) expect(err).toContain(flag);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('names the flag to change when a port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const serve = startCli(
        ['serve', '--port', '0', '--broker-port', String(port), '--broker-host', '127.0.0.1'],
        {
          REGBRIDGE_USER: 'u:p',
        },
      );
      expect((await serve.exit).code).toBe(2);
      expect(serve.stderr()).toContain('--broker-port');
      expect(serve.stderr()).not.toMatch(/\n\s+at /);
      const serveHttp = startCli(['serve', '--port', String(port), '--host', '127.0.0.1', '--no-mqtt'], {
        REGBRIDGE_USER: 'u:p',
      });
      expect((await serveHttp.exit).code).toBe(2);
      expect(serveHttp.stderr()).toContain('--port');
    } finally {
      blocker.close();
    }
  });
  it('takes its whole configuration from REGBRIDGE_* variables', async () => {
    const serve = startCli(['serve'], {
      REGBRIDGE_PORT: '0',
      REGBRIDGE_HOST: '127.0.0.1',
      REGBRIDGE_DEVICE_ID: 'env-1',
      REGBRIDGE_USER: 'ann:pw1,bob:pw2',
      REGBRIDGE_NO_MQTT: 'true',
      REGBRIDGE_RETAIN: '5',
      REGBRIDGE_MAX_QUEUE: '7',
      REGBRIDGE_INSTALLATION: 'pos',
      REGBRIDGE_LOG_LEVEL: 'warn',
    });
    const httpPort = await waitForOutput(serve, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
    const health = (await (await fetch(`http://127.0.0.1:${httpPort}/health`)).json()) as Record<
      string,
      unknown
    >;
    expect(health).toMatchObject({
      deviceId: 'env-1',
      installation: 'pos',
      queue: { retain: 5, maxQueue: 7 },
      mqtt: { state: 'disabled' },
    });
    const auth = await postJson(`http://127.0.0.1:${httpPort}/api/authenticate`, {
      userName: 'bob',
      password: 'pw2',
    });
    expect(auth.status).toBe(200);
    expect(serve.stdout()).not.toContain('created user admin');
    expect(await stopCli(serve)).toBe(0);
  });

  it('with --auth off needs no token on REST, and still creates admin for the embedded broker', async () => {
    const serve = startCli([...SERVE_ON_FREE_PORTS, '--auth', 'off', '--device-id', 'open-1']);
    const { httpPort, brokerPort, password } = await serveBanner(serve);
    const submitted = await postJson(`http://127.0.0.1:${httpPort}/api/vendor-script`, {
      vendorScript: 'PRINT open',
    });
    expect(submitted.status).toBe(202);
    const mqtt = await TestClient.connect(`mqtt://127.0.0.1:${brokerPort}`, ['pos/#'], {
      username: 'admin',
      password,
    });
    await mqtt.waitFor((m) => m.topic === 'pos/devices/open-1/state', 'state seen by admin');
    await mqtt.close();
    expect(await stopCli(serve)).toBe(0);
  });
});
