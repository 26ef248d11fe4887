/**
 * A head-office controller (`--ns 'stores/+'`, docs/controller.md "Many stores"): three store
 * brokers with their registers (real DeviceBridges with attributes), bridged by a Mosquitto hub
 * (the store side's topics in, scripts and cancels out), and the controller service on the hub
 * over real HTTP (app.inject). Registers of different stores share ids (r1 in s1, s2 and s3), so
 * every check also shows they are kept apart by store.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { Job } from '../../controller/job-types.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { skipWithout } from '../support/binaries.ts';
import { api, ended, login, waitForJob } from '../support/controller-service.ts';
import { type EventStreamReader, readEventStream } from '../support/event-stream.ts';
import { type HeadOffice, type HeadOfficeRegister, startHeadOffice } from '../support/head-office.ts';
import { until } from '../support/waits.ts';

const NS = 'stores/+';
const S1_OP = { name: 's1-op', password: 's1-op-pw' };

/** Each store's registers: id, groups, attributes. */
const STORES: Record<string, HeadOfficeRegister[]> = {
  s1: [
    { id: 'r1', groups: [], attributes: ['region=north', 'tier=flagship'] },
    { id: 'r2', groups: ['front'], attributes: ['region=south'] },
  ],
  s2: [
    { id: 'r1', groups: ['front'], attributes: ['region=north'] },
    { id: 'r2', groups: [], attributes: ['region=north'] },
  ],
  s3: [{ id: 'r1', groups: ['front'], attributes: ['region=south'] }],
};

describe.skipIf(skipWithout(['mosquitto'], 'a head-office controller over a Mosquitto hub'))(
  'a head-office controller for several stores',
  () => {
    let office: HeadOffice;
    let service: RunningControllerService;
    let token: string;
    let hubClient: MqttClient;

    beforeAll(async () => {
      office = await startHeadOffice(STORES, {
        users: [{ ...S1_OP, role: 'operator', scope: { kind: 'store', values: ['s1'] } }],
      });
      ({ service, token } = office);
      hubClient = mqtt.connect(office.hub.url, { reconnectPeriod: 0 });
      await new Promise<void>((resolve, reject) => {
        hubClient.once('connect', () => resolve());
        hubClient.once('error', reject);
      });
    }, 60_000);

    afterAll(async () => {
      await hubClient?.endAsync(true);
      await office?.stop();
    });

    /** Opens the event stream as `as` (a ticket), runs `read` once it is connected, then closes it. */
    async function withEvents(as: string, read: (stream: EventStreamReader) => Promise<void>): Promise<void> {
      const { ticket } = (await api(service.app, as, 'POST', '/api/events/ticket')).body;
      const abort = new AbortController();
      const response = await fetch(`http://127.0.0.1:${service.httpPort}/api/events?ticket=${ticket}`, {
        signal: abort.signal,
      });
      const stream = readEventStream(response);
      try {
        await stream.readUntil(/: connected/);
        await read(stream);
      } finally {
        abort.abort();
        await stream.cancel().catch(() => undefined);
      }
    }

    /** How many tasks of a register ended with `report` (REST, the register's own count). */
    async function ran(key: string, report: string): Promise<number> {
      const device = office.devices.get(key)!;
      const response = await fetch(`${device.baseUrl}/api/tasks`);
      const { tasks } = (await response.json()) as { tasks: { report?: string }[] };
      return tasks.filter((t) => t.report === report).length;
    }

    async function createJob(body: Record<string, unknown>, as = token): Promise<Job> {
      const created = await api(service.app, as, 'POST', '/api/jobs', body);
      expect(created.statusCode, JSON.stringify(created.body)).toBe(201);
      return created.body as Job;
    }

    it('lists every register with its store and attributes, and every store', async () => {
      const { statusCode, body } = await api(service.app, token, 'GET', '/api/devices');
      expect(statusCode).toBe(200);
      expect(
        body.devices.map((d: { store: string; deviceId: string; attributes: unknown; online: boolean }) => [
          d.store,
          d.deviceId,
          d.attributes,
          d.online,
        ]),
      ).toEqual([
        ['s1', 'r1', { region: 'north', tier: 'flagship' }, true],
        ['s1', 'r2', { region: 'south' }, true],
        ['s2', 'r1', { region: 'north' }, true],
        ['s2', 'r2', { region: 'north' }, true],
        ['s3', 'r1', { region: 'south' }, true],
      ]);
      const stores = await api(service.app, token, 'GET', '/api/stores');
      expect(stores.statusCode).toBe(200);
      expect(stores.body.stores).toEqual([
        { store: 's1', devices: 2, online: 2, lastSeenAt: expect.any(String), link: 'up', silent: false },
        { store: 's2', devices: 2, online: 2, lastSeenAt: expect.any(String), link: 'up', silent: false },
        { store: 's3', devices: 1, online: 1, lastSeenAt: expect.any(String), link: 'up', silent: false },
      ]);
    });

    it('runs a job on the registers matching every condition, and counts it per store', async () => {
      const job = await createJob({
        script: 'PRINT north-front',
        target: { group: 'all', stores: ['s1', 's2'], attributes: { region: 'north' } },
      });
      expect(job.results.map((r) => [r.store, r.deviceId])).toEqual([
        ['s1', 'r1'],
        ['s2', 'r1'],
        ['s2', 'r2'],
      ]);
      const done = await waitForJob(service, token, job.jobId, ended, 'the combined job');
      expect(done.status).toBe('COMPLETED');
      expect(done.results.map((r) => [r.store, r.deviceId, r.status, r.report])).toEqual([
        ['s1', 'r1', 'FINISHED', 'north-front'],
        ['s2', 'r1', 'FINISHED', 'north-front'],
        ['s2', 'r2', 'FINISHED', 'north-front'],
      ]);
      for (const key of ['s1/r1', 's2/r1', 's2/r2']) expect(await ran(key, 'north-front')).toBe(1);
      for (const key of ['s1/r2', 's3/r1']) expect(await ran(key, 'north-front')).toBe(0);

      const byStore = await api(service.app, token, 'GET', `/api/jobs/${job.jobId}?by=store`);
      expect(byStore.statusCode).toBe(200);
      const counts = (total: number) => ({
        total,
        pending: 0,
        running: 0,
        finished: total,
        failed: 0,
        offline: 0,
        noAnswer: 0,
        cancelled: 0,
      });
      expect(byStore.body.countsByStore).toEqual({ s1: counts(1), s2: counts(2) });
      const bad = await api(service.app, token, 'GET', `/api/jobs/${job.jobId}?by=region`);
      expect(bad.statusCode).toBe(400);

      // The history keeps the store: a search by store finds that store's results only.
      const found = await api(service.app, token, 'GET', `/api/results?jobId=${job.jobId}&store=s2`);
      expect(
        found.body.results.map((r: { store: string; deviceId: string }) => [r.store, r.deviceId]),
      ).toEqual([
        ['s2', 'r2'],
        ['s2', 'r1'],
      ]);
    });

    it('streams results with their store (event: job)', async () => {
      await withEvents(token, async (stream) => {
        await createJob({ script: 'PRINT streamed', target: { devices: ['s2/r2'] } });
        await stream.readUntil(/"result":\{[^\n]*"report":"streamed"/);
        const finished = stream.text
          .split('\n\n')
          .filter((block) => block.startsWith('event: job\ndata: '))
          .map((block) => JSON.parse(block.slice('event: job\ndata: '.length)))
          .find((event) => event.result?.report === 'streamed');
        expect(finished.result).toMatchObject({ store: 's2', deviceId: 'r2', status: 'FINISHED' });
      });
    });

    it("a store-scoped operator's event stream carries only its stores' registers and results", async () => {
      await withEvents(await login(service.app, S1_OP), async (stream) => {
        // Every store's registers run it; the last to end is s1's, after the others'.
        const job = await createJob({ script: 'PRINT everywhere', target: { stores: ['s2', 's3'] } });
        await waitForJob(service, token, job.jobId, ended, 'the job in s2 and s3');
        const own = await createJob({ script: 'PRINT own', target: { stores: ['s1'] } });
        await waitForJob(service, token, own.jobId, ended, 'the job in s1');
        await stream.readUntil(
          /"result":\{[^\n]*"report":"own"[^\n]*\n\n(.|\n)*"result":\{[^\n]*"report":"own"/,
        );
        const events = stream.text
          .split('\n\n')
          .filter((block) => block.startsWith('event: '))
          .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6)));
        const stores = new Set(
          events
            .flatMap((event) => [event.store, event.result?.store])
            .filter((store) => store !== undefined),
        );
        expect([...stores]).toEqual(['s1']);
        // The jobs themselves are not a store's: both are seen, without the other stores' results.
        expect(events.some((event) => event.jobId === job.jobId && event.result === undefined)).toBe(true);
      });
    });

    it('takes store/id and group together: a register must be in both', async () => {
      const job = await createJob({
        script: 'PRINT listed',
        target: { devices: ['s1/r2', 's3/r1', 's2/r2'], group: 'front' },
      });
      expect(job.results.map((r) => `${r.store}/${r.deviceId}`)).toEqual(['s1/r2', 's3/r1']);
      const done = await waitForJob(service, token, job.jobId, ended, 'the listed job');
      expect(done.results.map((r) => r.status)).toEqual(['FINISHED', 'FINISHED']);
      expect(await ran('s2/r2', 'listed')).toBe(0);
      // A plain id is that id in every store.
      const plain = await createJob({ script: 'PRINT plain', target: { devices: ['r2'] } });
      expect(plain.results.map((r) => `${r.store}/${r.deviceId}`)).toEqual(['s1/r2', 's2/r2']);
      await waitForJob(service, token, plain.jobId, ended, 'the plain-id job');
      expect(await ran('s1/r2', 'plain')).toBe(1);
      expect(await ran('s2/r2', 'plain')).toBe(1);
      const unknown = await api(service.app, token, 'POST', '/api/jobs', {
        script: 'PRINT x',
        target: { devices: ['s9/r1'] },
      });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.body.message).toContain('s9/r1 never seen by this controller');
    });

    it('drops a reply a register of another store published for a submission it was not sent', async () => {
      const job = await createJob({ script: 'SLEEP 3000\nPRINT slow', target: { devices: ['s2/r1'] } });
      const requestId = `${job.jobId}:s2:r1`;
      const before = service.controller.droppedReplies.not_sent;
      // Store s1's r1 "answers" for s2's r1: a refusal that would end the result FAILURE.
      await hubClient.publishAsync(
        `stores/s1/devices/r1/replies/${requestId}`,
        JSON.stringify({ requestId, deviceId: 'r1', error: 'QUEUE_FULL: forged' }),
        { qos: 1 },
      );
      await until(
        () => service.controller.droppedReplies.not_sent === before + 1,
        'the forged reply dropped',
      );
      const done = await waitForJob(service, token, job.jobId, ended, 'the slow job');
      expect(done.results.map((r) => [r.store, r.deviceId, r.status, r.report])).toEqual([
        ['s2', 'r1', 'FINISHED', 'slow'],
      ]);
    });

    it('bounds what a register says: attributes beyond the limits are dropped, the state kept', async () => {
      const attributes = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v']));
      await hubClient.publishAsync(
        'stores/s3/devices/liar/state',
        JSON.stringify({
          online: true,
          deviceId: 'liar',
          bootId: 'b1',
          installation: 'pos',
          version: '1',
          startedAt: new Date().toISOString(),
          groups: [],
          attributes,
        }),
        { qos: 1, retain: true },
      );
      await until(() => service.controller.device('s3/liar') !== undefined, 'the lying register seen');
      const { body } = await api(service.app, token, 'GET', '/api/devices');
      const liar = body.devices.find((d: { deviceId: string }) => d.deviceId === 'liar');
      expect(liar).toMatchObject({ store: 's3', deviceId: 'liar', online: true });
      expect(liar.attributes).toBeUndefined();
      await hubClient.publishAsync('stores/s3/devices/liar/state', '', { qos: 1, retain: true });
      await until(() => service.controller.device('s3/liar') === undefined, 'the lying register gone');
    });

    it('limits a store-scoped operator to its stores: lists filtered, other stores OUT_OF_SCOPE', async () => {
      const op = await login(service.app, S1_OP);
      const listed = await api(service.app, op, 'GET', '/api/devices');
      expect(
        listed.body.devices.map((d: { store: string; deviceId: string }) => `${d.store}/${d.deviceId}`),
      ).toEqual(['s1/r1', 's1/r2']);
      const stores = await api(service.app, op, 'GET', '/api/stores');
      expect(stores.body.stores.map((s: { store: string }) => s.store)).toEqual(['s1']);
      for (const target of [{ stores: ['s2'] }, { devices: ['s3/r1'] }, { group: 'front' }]) {
        const refused = await api(service.app, op, 'POST', '/api/jobs', { script: 'PRINT no', target });
        expect(refused.statusCode, JSON.stringify(target)).toBe(403);
        expect(refused.body.code).toBe('OUT_OF_SCOPE');
      }
      // Only s1's r1 is a flagship now, but a continuous job would take any that joins later.
      const continuous = await api(service.app, op, 'POST', '/api/jobs', {
        script: 'PRINT no',
        target: { attributes: { tier: 'flagship' }, continuous: true },
        endAt: new Date(Date.now() + 60_000).toISOString(),
      });
      expect(continuous.statusCode).toBe(403);
      expect(continuous.body.code).toBe('OUT_OF_SCOPE');
      const job = await createJob({ script: 'PRINT scoped', target: { stores: ['s1'] } }, op);
      const done = await waitForJob(service, op, job.jobId, ended, 'the scoped job');
      expect(done.results.map((r) => [r.store, r.deviceId, r.status])).toEqual([
        ['s1', 'r1', 'FINISHED'],
        ['s1', 'r2', 'FINISHED'],
      ]);
      const results = await api(service.app, op, 'GET', '/api/results?deviceId=r1');
      expect(new Set(results.body.results.map((r: { store: string }) => r.store))).toEqual(new Set(['s1']));
    });

    it('resumes a job over several stores after a restart, running each script once', async () => {
      const job = await createJob({
        script: 'SLEEP 400\nPRINT resumed',
        target: { stores: ['s1', 's2', 's3'] },
        rollout: { batchSize: 1 },
      });
      await waitForJob(
        service,
        token,
        job.jobId,
        (j) => j.counts.finished >= 1 && j.counts.running === 1,
        'the first result ended and the second sent',
      );
      await office.restartService();
      ({ service, token } = office);
      const done = await waitForJob(service, token, job.jobId, ended, 'the resumed job', 30_000);
      expect(done.status).toBe('COMPLETED');
      expect(done.results.map((r) => `${r.store}/${r.deviceId}:${r.status}`)).toEqual([
        's1/r1:FINISHED',
        's1/r2:FINISHED',
        's2/r1:FINISHED',
        's2/r2:FINISHED',
        's3/r1:FINISHED',
      ]);
      for (const key of office.devices.keys()) expect(await ran(key, 'resumed'), key).toBe(1);
    }, 60_000);

    it('fanout (the library) sends a group script once per store and keys results store/id', async () => {
      const controller = new StoreController({ url: office.hub.url, ns: NS, settleMs: 100 });
      try {
        await controller.start();
        const results = await controller.submit('PRINT front', {
          to: { group: 'front' },
          deadlineMs: 15_000,
        });
        expect(results.map((r) => [r.deviceId, r.status])).toEqual([
          ['s1/r2', 'FINISHED'],
          ['s2/r1', 'FINISHED'],
          ['s3/r1', 'FINISHED'],
        ]);
        for (const key of ['s1/r2', 's2/r1', 's3/r1']) expect(await ran(key, 'front')).toBe(1);
        for (const key of ['s1/r1', 's2/r2']) expect(await ran(key, 'front')).toBe(0);
      } finally {
        await controller.stop();
      }
    });

    it('shows a store with no register online, or whose link is down, as silent', async () => {
      for (const key of ['s2/r1', 's2/r2']) {
        await office.devices.get(key)!.stop();
        office.devices.delete(key);
      }
      await until(
        () => service.controller.devices().filter((d) => d.store === 's2' && !d.online).length === 2,
        "s2's registers offline",
      );
      // Store s3's broker goes away: the hub's bridge to it drops and says so on link/state;
      // its register's last state at the hub still says online.
      await office.brokers.get('s3')!.stop();
      await until(() => service.controller.storeLinks().get('s3')?.up === false, "s3's link down");
      const { body } = await api(service.app, token, 'GET', '/api/stores');
      expect(body.stores).toEqual([
        { store: 's1', devices: 2, online: 2, lastSeenAt: expect.any(String), link: 'up', silent: false },
        { store: 's2', devices: 2, online: 0, lastSeenAt: expect.any(String), link: 'up', silent: true },
        { store: 's3', devices: 1, online: 1, lastSeenAt: expect.any(String), link: 'down', silent: true },
      ]);
    });
  },
);
