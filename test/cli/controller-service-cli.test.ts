/**
 * `regbridge controller` as a real child process with a real SQLite file: configuration errors,
 * flags from REGBRIDGE_<FLAG>, the embedded broker, history that survives a restart, and a job
 * that resumes after the controller was killed with SIGKILL mid-job without running any script
 * twice.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { brokersByName } from '../support/brokers.ts';
import { type CliProcess, startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { runCli } from '../support/controller-cli.ts';
import { controllerUrl, startRealDevice } from '../support/controller-env.ts';
import { callAt, pollJobAt } from '../support/controller-service.ts';
import { silent } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-ctl-'));
afterEach(() => stopAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function httpPort(service: CliProcess): Promise<number> {
  return Number(await waitForOutput(service, /listening on http:\/\/127\.0\.0\.1:(\d+)/));
}

async function loginAt(port: number, password: string): Promise<string> {
  const response = await callAt(port, undefined, 'POST', '/api/authenticate', {
    userName: 'admin',
    password,
  });
  expect(response.status).toBe(200);
  return response.body.token as string;
}

describe('regbridge controller', () => {
  it('refuses a configuration without a broker, or with both, listing every problem (exit 2)', async () => {
    const none = await runCli(['controller', '--port', 'x']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--port:');
    expect(none.stderr).toContain('--mqtt-url: required');
    const both = await runCli(['controller', '--mqtt-url', 'mqtt://127.0.0.1:1', '--broker-port', '0'], {
      env: { REGBRIDGE_TLS_CERT: join(dir, 'missing.pem') },
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--broker-port: give either --mqtt-url or --broker-port, not both');
    expect(both.stderr).toContain(
      '--tls-cert (from REGBRIDGE_TLS_CERT, read by regbridge controller): cannot read',
    );
    expect(both.stderr).toContain('--tls-cert: needs --tls-key too');
  });

  it('embeds a store broker, prints its login once, and keeps jobs and the audit trail across a restart', async () => {
    const db = join(dir, `history-${randomUUID()}.db`);
    const env = {
      REGBRIDGE_PORT: '0',
      REGBRIDGE_HOST: '127.0.0.1',
      REGBRIDGE_BROKER_PORT: '0',
      REGBRIDGE_BROKER_HOST: '127.0.0.1',
      REGBRIDGE_BROKER_USER: 'reg1:reg1-pw:device',
      REGBRIDGE_DB: db,
      REGBRIDGE_NS: 'shop',
      REGBRIDGE_LOG_LEVEL: 'warn',
    };
    const first = startCli(['controller'], env);
    const port = await httpPort(first);
    const brokerPort = Number(
      await waitForOutput(first, /embedded MQTT broker on mqtt:\/\/127\.0\.0\.1:(\d+)/),
    );
    const password = await waitForOutput(first, /created user admin with password (\S+)/);
    expect(first.stdout()).toContain(`history in ${db}`);
    const device = await startDevice(
      parseServeConfig({
        port: 0,
        host: '127.0.0.1',
        deviceId: 'reg1',
        mqttUrl: `mqtt://reg1:reg1-pw@127.0.0.1:${brokerPort}`,
        ns: 'shop',
        users: ['admin:pw'],
        logLevel: 'silent',
      }),
      { logger: silent },
    );
    let devices: RunningDevice[] = [device];
    try {
      const token = await loginAt(port, password);
      let listed: { devices: { deviceId: string; online: boolean }[] } = { devices: [] };
      await until(
        async () => {
          listed = (await callAt(port, token, 'GET', '/api/devices')).body;
          return listed.devices.some((d) => d.online);
        },
        'the register online',
        10_000,
        20,
      );
      expect(listed.devices).toEqual([expect.objectContaining({ deviceId: 'reg1', online: true })]);
      const created = await callAt(port, token, 'POST', '/api/jobs', {
        script: 'X REPORT',
        target: { group: 'all' },
      });
      expect(created.status).toBe(201);
      const done = await pollJobAt(port, token, created.body.jobId, (job) => job.status === 'COMPLETED');
      expect(done.results[0]).toMatchObject({
        deviceId: 'reg1',
        status: 'FINISHED',
        report: expect.stringContaining('X REPORT'),
      });

      first.child.kill('SIGTERM');
      expect((await first.exit).code).toBe(0);
      await Promise.allSettled(devices.map((d) => d.stop()));
      devices = [];

      // The second process has its own generated password; the history is the same file.
      const second = startCli(['controller'], env);
      const port2 = await httpPort(second);
      const token2 = await loginAt(
        port2,
        await waitForOutput(second, /created user admin with password (\S+)/),
      );
      const again = await callAt(port2, token2, 'GET', `/api/jobs/${created.body.jobId}`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(done);
      const audit = await callAt(port2, token2, 'GET', '/api/audit');
      expect(audit.body.entries.map((e: { action: string }) => e.action)).toEqual([
        'login',
        'job_completed',
        'job_created',
        'login',
      ]);
      second.child.kill('SIGTERM');
      expect((await second.exit).code).toBe(0);
    } finally {
      await Promise.allSettled(devices.map((d) => d.stop()));
    }
  });

  it('a job resumes after the controller is killed with SIGKILL mid-job; no script runs twice', async () => {
    const ns = `stores/k${randomUUID().slice(0, 6)}`;
    const broker = await brokersByName.embedded.start(ns);
    const ids = ['reg1', 'reg2', 'reg3'];
    const devices = await Promise.all(ids.map((id) => startRealDevice(broker, ns, id)));
    const db = join(dir, `resume-${randomUUID()}.db`);
    const args = [
      'controller',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--ns',
      ns,
      '--db',
      db,
      '--user',
      'admin:pw',
    ];
    const env = { REGBRIDGE_MQTT_URL: controllerUrl(broker), REGBRIDGE_LOG_LEVEL: 'warn' };
    try {
      const first = startCli(args, env);
      const port = await httpPort(first);
      const token = await loginAt(port, 'pw');
      const created = await callAt(port, token, 'POST', '/api/jobs', {
        script: 'PRINT start\nSLEEP 1500\nPRINT end',
        target: { devices: ids },
        rollout: { batchSize: 1 },
      });
      expect(created.status).toBe(201);
      const jobId = created.body.jobId as string;
      // Killed while reg2 runs (reg1 finished, reg3 not sent yet).
      await pollJobAt(port, token, jobId, (job) => job.counts.finished === 1 && job.counts.running === 1);
      first.child.kill('SIGKILL');
      expect((await first.exit).signal).toBe('SIGKILL');

      const second = startCli(args, env);
      const port2 = await httpPort(second);
      const token2 = await loginAt(port2, 'pw');
      const job = await pollJobAt(port2, token2, jobId, (j) => j.endedAt !== undefined);
      expect(job.status).toBe('COMPLETED');
      expect(job.results.map((r) => [r.deviceId, r.status, r.report ?? r.error])).toEqual(
        ids.map((id) => [id, 'FINISHED', 'start\nend']),
      );
      for (const [i, device] of devices.entries()) {
        const ran = device.queue.list().filter((task) => task.requestId === `${jobId}:${ids[i]}`);
        expect(ran, ids[i]).toHaveLength(1);
        expect(device.queue.list()).toHaveLength(1);
      }
      second.child.kill('SIGTERM');
      await second.exit;
    } finally {
      await Promise.allSettled(devices.map((d) => d.stop()));
      await broker.stop();
    }
  });
});
