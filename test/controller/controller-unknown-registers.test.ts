/**
 * A register list with an id the controller has never seen (`reg1, reg99`) is refused at once,
 * naming it, as an unknown group is; `"allowUnknown": true` takes it on purpose (a register that
 * will connect later). Real registers on a real broker, over the service's HTTP API.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import type { RunningDevice } from '../../cli/device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { startRealDevice } from '../support/controller-env.ts';
import { api, login, startService } from '../support/controller-service.ts';
import { until } from '../support/waits.ts';

const ns = `stores/unk${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let device: RunningDevice;
let service: RunningControllerService;
let token: string;

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  device = await startRealDevice(broker, ns, 'reg1');
  service = await startService(broker, ns);
  await until(() => service.controller.device('reg1')?.online === true, 'reg1 online');
  token = await login(service.app);
});

afterAll(async () => {
  await service?.stop();
  await device?.stop();
  await broker?.stop();
});

describe('registers the controller has never seen', () => {
  it('a typo in the list is refused at once (400), naming the unknown ids; no job is created', async () => {
    const before = (await api(service.app, token, 'GET', '/api/jobs')).body.jobs.length;
    const refused = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'X REPORT',
      target: { devices: ['reg1', 'reg99', 'reg98'] },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message:
        'body field \'target\': registers reg99, reg98 never seen by this controller: check the ids, or add "allowUnknown": true to send when they first connect',
    });
    expect((await api(service.app, token, 'GET', '/api/jobs')).body.jobs.length).toBe(before);
  });

  it('store/id and "stores" are refused (400) by a controller of one store: they could never match', async () => {
    for (const [target, why] of [
      [{ devices: ['s1/reg1'], allowUnknown: true }, '"s1/reg1": store/id'],
      [{ group: 'all', stores: ['s1'] }, '"stores"'],
    ] as const) {
      const refused = await api(service.app, token, 'POST', '/api/jobs', { script: 'PRINT no', target });
      expect(refused.body, JSON.stringify(target)).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        code: 'INVALID_REQUEST',
        message: `body field 'target': ${why} needs a controller of several stores (--ns 'stores/+')`,
      });
    }
  });

  it('"allowUnknown": true takes them: the known one runs, the unknown one waits for its deadline', async () => {
    const created = await api(service.app, token, 'POST', '/api/jobs', {
      script: 'PRINT hi',
      target: { devices: ['reg1', 'reg99'], allowUnknown: true },
    });
    expect(created.statusCode).toBe(201);
    expect(created.body.target).toEqual({ devices: ['reg1', 'reg99'], allowUnknown: true });
    expect(created.body.results.map((r: { deviceId: string }) => r.deviceId)).toEqual(['reg1', 'reg99']);
    await api(service.app, token, 'POST', `/api/jobs/${created.body.jobId}/cancel`);
  });
});
