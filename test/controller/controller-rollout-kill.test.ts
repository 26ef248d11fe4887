/**
 * Rollout control survives a SIGKILL of a real `regbridge controller` process (real SQLite file,
 * real store broker, real registers): a job paused after its first wave is still paused after the
 * restart and resumes with the next wave; a job killed while a wave runs, and one killed while a
 * retry waits out its backoff, end with every script run exactly once.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningDevice } from '../../cli/device.ts';
import type { Job } from '../../controller/job-types.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { type CliProcess, startCli, stopAll, waitForOutput } from '../support/cli-process.ts';
import { controllerUrl, startRealDevice } from '../support/controller-env.ts';
import { callAt, pollJobAt } from '../support/controller-service.ts';

const dir = mkdtempSync(join(tmpdir(), 'regbridge-rollout-'));
afterEach(() => stopAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A controller process on `db`; resolves once it listens, with its port and a token. */
async function controller(broker: RunningBroker, ns: string, db: string) {
  const process = startCli(
    ['controller', '--port', '0', '--host', '127.0.0.1', '--ns', ns, '--db', db, '--user', 'admin:pw'],
    { REGBRIDGE_MQTT_URL: controllerUrl(broker), REGBRIDGE_LOG_LEVEL: 'warn' },
  );
  const port = Number(await waitForOutput(process, /listening on http:\/\/127\.0\.0\.1:(\d+)/));
  const login = await callAt(port, undefined, 'POST', '/api/authenticate', {
    userName: 'admin',
    password: 'pw',
  });
  return { process, port, token: login.body.token as string };
}

async function kill(running: { process: CliProcess }): Promise<void> {
  running.process.child.kill('SIGKILL');
  expect((await running.process.exit).signal).toBe('SIGKILL');
}

function ranOnce(device: RunningDevice, requestId: string): void {
  expect(
    device.queue.list().filter((task) => task.requestId === requestId),
    requestId,
  ).toHaveLength(1);
}

describe('rollout control across a SIGKILL of the controller', () => {
  it('mid-wave: paused after wave 1 stays paused; killed while wave 2 runs, nothing runs twice', async () => {
    const ns = `stores/kill${randomUUID().slice(0, 6)}`;
    const broker = await brokersByName.embedded.start(ns);
    const ids = ['k1', 'k2', 'k3'];
    const devices = await Promise.all(ids.map((id) => startRealDevice(broker, ns, id)));
    const db = join(dir, `waves-${randomUUID()}.db`);
    try {
      const first = await controller(broker, ns, db);
      const created = await callAt(first.port, first.token, 'POST', '/api/jobs', {
        script: 'PRINT start\nSLEEP 1000\nPRINT end',
        target: { devices: ids },
        rollout: { waves: [{ size: 1, pauseAfter: true }, { size: 2 }] },
      });
      expect(created.status).toBe(201);
      const jobId = created.body.jobId as string;
      const paused = await pollJobAt(first.port, first.token, jobId, (j) => j.status === 'PAUSED');
      await kill(first);

      const second = await controller(broker, ns, db);
      const after = (await callAt(second.port, second.token, 'GET', `/api/jobs/${jobId}`)).body as Job;
      expect(after).toMatchObject({
        status: 'PAUSED',
        pausedReason: paused.pausedReason,
        wave: { current: 1, count: 2 },
      });
      expect(after.results.map((r) => r.status)).toEqual(['FINISHED', 'PENDING', 'PENDING']);
      const resumed = await callAt(second.port, second.token, 'POST', `/api/jobs/${jobId}/resume`);
      expect(resumed.body.wave).toEqual({ current: 2, count: 2 });
      await pollJobAt(second.port, second.token, jobId, (j) => j.counts.running === 2);
      await kill(second);

      const third = await controller(broker, ns, db);
      const done = await pollJobAt(third.port, third.token, jobId, (j) => j.endedAt !== undefined);
      expect(done.status).toBe('COMPLETED');
      expect(done.results.map((r) => [r.status, r.report, r.attempts])).toEqual(
        ids.map(() => ['FINISHED', 'start\nend', 1]),
      );
      for (const [i, device] of devices.entries()) ranOnce(device, `${jobId}:${ids[i]}`);
      third.process.child.kill('SIGTERM');
      await third.process.exit;
    } finally {
      await Promise.allSettled(devices.map((d) => d.stop()));
      await broker.stop();
    }
  });

  it('mid-backoff: the retry waits out its backoff after the restart and runs the script once', async () => {
    const ns = `stores/kill${randomUUID().slice(0, 6)}`;
    const broker = await brokersByName.embedded.start(ns);
    const db = join(dir, `retry-${randomUUID()}.db`);
    let device: RunningDevice | undefined;
    try {
      const first = await controller(broker, ns, db);
      const created = await callAt(first.port, first.token, 'POST', '/api/jobs', {
        script: 'PRINT z',
        target: { devices: ['night'], allowUnknown: true },
        retry: { maxAttempts: 3, backoffMs: 1500, on: ['OFFLINE'] },
      });
      expect(created.status).toBe(201);
      const jobId = created.body.jobId as string;
      const waiting = created.body.results[0];
      expect(waiting).toMatchObject({ status: 'PENDING', attempts: 1, nextAttemptAt: expect.any(String) });
      await kill(first);
      device = await startRealDevice(broker, ns, 'night');

      const second = await controller(broker, ns, db);
      const done = await pollJobAt(second.port, second.token, jobId, (j) => j.endedAt !== undefined);
      expect(done.results[0]).toMatchObject({ status: 'FINISHED', report: 'z', attempts: 2 });
      expect(Date.parse(done.results[0]!.sentAt!)).toBeGreaterThanOrEqual(Date.parse(waiting.nextAttemptAt));
      ranOnce(device, `${jobId}:night`);
      second.process.child.kill('SIGTERM');
      await second.process.exit;
    } finally {
      await device?.stop();
      await broker.stop();
    }
  });
});
