/**
 * DeviceClient end to end against real devices on port 0 (REST only): the vendor's asynchronous
 * flow, the synchronous fm-script call, token expiry and re-authentication, wrong credentials,
 * and the credential-less constructor against `--auth off`.
 */
import { Agent, type Dispatcher, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig, type ServeConfigInput } from '../../cli/serve-config.ts';
import {
  DeviceClient,
  RestException,
  TaskDoesNotExistException,
  TaskProcessingException,
  TimeoutException,
} from '../../src/client/index.ts';
import { silent } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

const logger = silent;
const devices: RunningDevice[] = [];
const clients: DeviceClient[] = [];

async function device(input: Partial<ServeConfigInput> = {}): Promise<RunningDevice> {
  const started = await startDevice(
    parseServeConfig({ port: 0, host: '127.0.0.1', mqtt: false, users: ['u:p'], ...input }),
    { logger },
  );
  devices.push(started);
  return started;
}

function track(client: DeviceClient): DeviceClient {
  clients.push(client);
  return client;
}

let main: RunningDevice;
let client: DeviceClient;

beforeAll(async () => {
  main = await device();
  client = track(new DeviceClient('127.0.0.1', main.httpPort, 'u', 'p'));
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(devices.map((d) => d.stop()));
});

describe("the vendor's asynchronous flow", () => {
  it('vendorScript, then waitForTask, gives the report', async () => {
    const id = await client.vendorScript('PRINT hello\r\n# a comment\nSLEEP 50\nprint world');
    expect(Number.isSafeInteger(id) && id > 0).toBe(true);
    expect(await client.waitForTask(id, { intervalMs: 20, timeoutMs: 10_000 })).toBe('hello\nworld');
    const status = await client.getTaskStatus(id);
    expect(status).toMatchObject({ id, status: 'FINISHED', report: 'hello\nworld' });
    expect(typeof status.queuedAt).toBe('string');
  });

  it('a FAILURE task throws TaskProcessingException with the error text', async () => {
    const id = await client.vendorScript('PRINT before\nFAIL paper jam\nPRINT never');
    const error = await client.waitForTask(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskProcessingException);
    expect(error).toMatchObject({ taskId: id, taskError: 'paper jam', code: 'TASK_FAILURE' });
    expect(error).toBeInstanceOf(RestException);
  });

  it('an unknown id reads TASK_DOES_NOT_EXIST and waitForTask throws TaskDoesNotExistException', async () => {
    const unknown = 9_000_000;
    expect(await client.getTaskStatus(unknown)).toEqual({ id: unknown, status: 'TASK_DOES_NOT_EXIST' });
    const error = await client.waitForTask(unknown).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskDoesNotExistException);
    expect(error).toMatchObject({ taskId: unknown, statusCode: 404, code: 'TASK_DOES_NOT_EXIST' });
  });

  it('an evicted id throws TaskDoesNotExistException', async () => {
    const small = await device({ retain: 1 });
    const c = track(new DeviceClient('127.0.0.1', small.httpPort, 'u', 'p'));
    const first = await c.vendorScript('PRINT one');
    expect(await c.waitForTask(first)).toBe('one');
    expect(await c.processFmScript('PRINT two')).toBe('two');
    await expect(c.waitForTask(first)).rejects.toBeInstanceOf(TaskDoesNotExistException);
  });

  it('long-polls: the wait ends with the task, not with waitMs', async () => {
    const id = await client.vendorScript('SLEEP 100\nPRINT done');
    const status = await client.getTaskStatus(id, { waitMs: 20_000 });
    expect(status).toMatchObject({ status: 'FINISHED', report: 'done' });
  });

  it('times out on a task that does not end in time, naming the task', async () => {
    const id = await client.vendorScript('SLEEP 1500');
    const error = await client.waitForTask(id, { timeoutMs: 100, intervalMs: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutException);
    expect(error).toMatchObject({ taskId: id });
    expect(await client.waitForTask(id, { timeoutMs: 10_000 })).toBe('');
  });

  it('the same Idempotency-Key and script give the same task', async () => {
    const a = await client.vendorScript('PRINT once', 'key-42');
    const b = await client.vendorScript('PRINT once', 'key-42');
    expect(b).toBe(a);
    const conflict = await client.vendorScript('PRINT other', 'key-42').catch((e: unknown) => e);
    expect(conflict).toMatchObject({ statusCode: 409, code: 'IDEMPOTENCY_CONFLICT' });
  });
});

describe('cancelTask', () => {
  it('cancels a queued task; a running one is TASK_RUNNING, an ended one TASK_ENDED, an unknown one does not exist', async () => {
    const own = await device();
    const c = track(new DeviceClient('127.0.0.1', own.httpPort, 'u', 'p'));
    const running = await c.vendorScript('SLEEP 30000');
    const queued = await c.vendorScript('PRINT never');
    const cancelled = await c.cancelTask(queued);
    expect(cancelled).toEqual({
      id: queued,
      status: 'FAILURE',
      error: `CANCELLED: cancelled over REST (DELETE /api/tasks/${queued}) before it started`,
      queuedAt: expect.any(String),
      finishedAt: expect.any(String),
    });
    const failure = await c.waitForTask(queued).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TaskProcessingException);
    expect(failure).toMatchObject({ taskId: queued, taskError: cancelled.error });

    const busy = await c.cancelTask(running).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(RestException);
    expect(busy).toMatchObject({ statusCode: 409, code: 'TASK_RUNNING' });
    const again = await c.cancelTask(queued).catch((e: unknown) => e);
    expect(again).toMatchObject({
      statusCode: 409,
      code: 'TASK_ENDED',
      body: expect.objectContaining({ id: queued, status: 'FAILURE' }),
    });
    const unknown = await c.cancelTask(9_000_000).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(TaskDoesNotExistException);
    expect(unknown).toMatchObject({ taskId: 9_000_000, statusCode: 404 });
    expect((await c.getTaskStatus(running)).status).toBe('RUNNING');
  });
});

describe('processFmScript', () => {
  it('resolves to the report, and to the empty string for a script that prints nothing', async () => {
    expect(await client.processFmScript('PRINT a\nPRINT b')).toBe('a\nb');
    expect(await client.processFmScript('# nothing to print\nSLEEP 0')).toBe('');
  });

  it('continues with waitForTask when the device answers 202', async () => {
    const report = await client.processFmScript('SLEEP 300\nPRINT late', {
      serverWaitMs: 20,
      timeoutMs: 10_000,
    });
    expect(report).toBe('late');
  });

  it('throws TaskProcessingException on FAILURE and a 400 RestException on an empty script', async () => {
    await expect(client.processFmScript('FAIL drawer open')).rejects.toMatchObject({
      name: 'TaskProcessingException',
      taskError: 'drawer open',
    });
    await expect(client.processFmScript('  ')).rejects.toMatchObject({
      statusCode: 400,
      code: 'INVALID_REQUEST',
    });
  });

  it('reports an unknown command as FAILURE naming line and command', async () => {
    const error = (await client
      .processFmScript('PRINT x\nFROB 1')
      .catch((e: unknown) => e)) as TaskProcessingException;
    expect(error).toBeInstanceOf(TaskProcessingException);
    expect(error.taskError).toMatch(/2/);
    expect(error.taskError).toMatch(/FROB/i);
  });
});

describe('authentication', () => {
  it('wrong password throws RestException INVALID_CREDENTIALS', async () => {
    const c = track(new DeviceClient('127.0.0.1', main.httpPort, 'u', 'wrong'));
    const error = await c.vendorScript('PRINT x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RestException);
    expect(error).toMatchObject({ statusCode: 401, code: 'INVALID_CREDENTIALS' });
    expect((error as RestException).serverMessage).toBeTruthy();
  });

  it('the credential-less client gets 401 UNAUTHORIZED from a device with auth on', async () => {
    const c = track(new DeviceClient('127.0.0.1', main.httpPort));
    await expect(c.vendorScript('PRINT x')).rejects.toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' });
  });

  it('the credential-less client works against --auth off, sending no Authorization header', async () => {
    const open = await device({ auth: 'off', users: [] });
    const seen: Array<string | undefined> = [];
    // Records every request's Authorization header on its way out.
    const recorder: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      const headers = (opts.headers ?? {}) as Record<string, string>;
      seen.push(headers.authorization);
      return dispatch(opts, handler);
    };
    const agent = new Agent();
    const c = track(new DeviceClient('127.0.0.1', open.httpPort, { dispatcher: agent.compose(recorder) }));
    const id = await c.vendorScript('PRINT open');
    expect(await c.waitForTask(id)).toBe('open');
    expect(await c.processFmScript('PRINT sync')).toBe('sync');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.every((h) => h === undefined)).toBe(true);
    await agent.close();
  });

  it('re-authenticates once when the token expired, and the call succeeds', async () => {
    const shortLived = await device({ tokenTtl: 1 });
    const paths: string[] = [];
    const recorder: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      paths.push(`${opts.method} ${opts.path}`);
      return dispatch(opts, handler);
    };
    const agent = new Agent();
    const c = track(
      new DeviceClient('127.0.0.1', shortLived.httpPort, 'u', 'p', { dispatcher: agent.compose(recorder) }),
    );
    expect(await c.processFmScript('PRINT first')).toBe('first');
    expect(paths.filter((p) => p.includes('/api/authenticate'))).toHaveLength(1);

    // A probe token issued after the client's: once the device refuses it, the client's has expired too.
    const origin = `http://127.0.0.1:${shortLived.httpPort}`;
    const auth = await request(`${origin}/api/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userName: 'u', password: 'p' }),
    });
    const { token } = (await auth.body.json()) as { token: string };
    await until(async () => {
      const res = await request(`${origin}/api/tasks`, { headers: { authorization: `Bearer ${token}` } });
      await res.body.dump();
      return res.statusCode === 401;
    });

    expect(await c.processFmScript('PRINT second')).toBe('second');
    expect(paths.filter((p) => p.includes('/api/authenticate'))).toHaveLength(2);
    // The refused call, a fresh token, the same call again.
    expect(paths.slice(-3)).toEqual([
      'POST /api/fm-script?timeoutMs=60000',
      'GET /api/authenticate',
      'POST /api/fm-script?timeoutMs=60000',
    ]);
    await agent.close();
  });
});
