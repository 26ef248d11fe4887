/**
 * docs/api.md, retention and restarts over HTTP: the last 128 ended tasks are kept, older
 * ids answer TASK_DOES_NOT_EXIST; after a restart (a new app and queue, everything in RAM gone)
 * every earlier id answers TASK_DOES_NOT_EXIST and new ids are larger than all of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, login, startTestApp, type TestApp } from '../support/http.ts';

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function submitMany(test: TestApp, count: number): Promise<number[]> {
  const token = await login(test.app);
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const response = await test.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: bearer(token),
      payload: { vendorScript: `PRINT task ${i}` },
    });
    expect(response.statusCode).toBe(202);
    ids.push((response.json() as { id: number }).id);
  }
  return ids;
}

async function statusOf(test: TestApp, id: number): Promise<{ statusCode: number; body: unknown }> {
  const token = await login(test.app);
  const response = await test.app.inject({ method: 'GET', url: `/api/tasks/${id}`, headers: bearer(token) });
  return { statusCode: response.statusCode, body: response.json() };
}

function notFound(id: number) {
  return {
    statusCode: 404,
    error: 'Not Found',
    code: 'TASK_DOES_NOT_EXIST',
    message: `Task ${id} does not exist`,
    id,
    status: 'TASK_DOES_NOT_EXIST',
  };
}

describe('retention of ended tasks (docs/api.md)', () => {
  it('keeps the last 128 of 130 tasks, forgets the first two, and forgets everything on restart', async () => {
    const first = await startTestApp();
    apps.push(first);
    const ids = await submitMany(first, 130);
    for (let i = 1; i < ids.length; i += 1) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
    await first.queue.waitForEnd(ids[129]!, 10_000);

    for (const id of ids.slice(0, 2))
      expect(await statusOf(first, id)).toEqual({ statusCode: 404, body: notFound(id) });
    const third = await statusOf(first, ids[2]!);
    expect(third.statusCode).toBe(200);
    expect(third.body).toMatchObject({ id: ids[2], status: 'FINISHED', report: 'task 2' });
    const last = await statusOf(first, ids[129]!);
    expect(last.body).toMatchObject({ id: ids[129], status: 'FINISHED', report: 'task 129' });

    const token = await login(first.app);
    const list = await first.app.inject({ method: 'GET', url: '/api/tasks', headers: bearer(token) });
    const listed = (list.json() as { tasks: Array<{ id: number }> }).tasks.map((t) => t.id);
    expect(listed).toEqual(ids.slice(2).reverse());

    // Restart: a new app over a new queue; nothing survives.
    await first.close();
    apps.splice(apps.indexOf(first), 1);
    const second = await startTestApp();
    apps.push(second);
    for (const id of [ids[0]!, ids[2]!, ids[64]!, ids[129]!]) {
      expect(await statusOf(second, id)).toEqual({ statusCode: 404, body: notFound(id) });
    }
    const [fresh] = await submitMany(second, 1);
    expect(fresh).toBeGreaterThan(ids[129]!);
    expect(fresh).toBeLessThan(2 ** 53);
  });

  it('honours --retain', async () => {
    const test = await startTestApp({ retain: 3 });
    apps.push(test);
    const ids = await submitMany(test, 5);
    await test.queue.waitForEnd(ids[4]!, 5000);
    expect((await statusOf(test, ids[1]!)).statusCode).toBe(404);
    expect((await statusOf(test, ids[2]!)).statusCode).toBe(200);
  });
});
