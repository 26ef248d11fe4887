/**
 * `DELETE /api/tasks/{id}` (docs/api.md), every row with its exact body: a queued task
 * ends FAILURE `CANCELLED`; a running one is 409 TASK_RUNNING (never cut); an ended one 409
 * TASK_ENDED with id and status; an unknown one 404 TASK_DOES_NOT_EXIST; and the OpenAPI route.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, login, startTestApp, type TestApp } from '../support/http.ts';
import { until } from '../support/waits.ts';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let t: TestApp;
let auth: Record<string, string>;

beforeEach(async () => {
  t = await startTestApp();
  auth = bearer(await login(t.app));
});

afterEach(async () => {
  await t.close();
});

async function submit(script: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/vendor-script',
    headers: { ...auth, ...headers },
    payload: { vendorScript: script },
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return (response.json() as { id: number }).id;
}

function cancel(id: number | string, headers: Record<string, string> = auth) {
  return t.app.inject({ method: 'DELETE', url: `/api/tasks/${id}`, headers });
}

/** A HOLD task running (so what is submitted after it stays queued). */
async function holdRunning(): Promise<number> {
  const id = await submit('HOLD');
  await until(() => t.executor.held === 1);
  return id;
}

describe('DELETE /api/tasks/{id}', () => {
  it('200: a queued task ends FAILURE with an error starting CANCELLED and never runs', async () => {
    const running = await holdRunning();
    const queued = await submit('PRINT never');
    const later = await submit('PRINT later');
    const response = await cancel(queued);
    expect(response.statusCode).toBe(200);
    const body = response.json() as Record<string, string>;
    expect(body).toEqual({
      id: queued,
      status: 'FAILURE',
      error: `CANCELLED: cancelled over REST (DELETE /api/tasks/${queued}) before it started`,
      queuedAt: expect.stringMatching(ISO),
      finishedAt: expect.stringMatching(ISO),
    });
    // The same task from then on; the queue goes on with the next one.
    expect((await t.app.inject({ url: `/api/tasks/${queued}`, headers: auth })).json()).toEqual(body);
    t.executor.release();
    const next = await t.app.inject({ url: `/api/tasks/${later}?waitMs=5000`, headers: auth });
    expect(next.json()).toMatchObject({ status: 'FINISHED', report: 'later' });
    expect(t.queue.get(running)?.state).toBe('finished');
    expect(t.queue.queuedCount).toBe(0);
  });

  it('200 also with Content-Type: application/json and no body (what many clients send)', async () => {
    await holdRunning();
    const queued = await submit('PRINT never');
    const response = await cancel(queued, { ...auth, 'content-type': 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ id: queued, status: 'FAILURE' });
  });

  it('a synchronous fm-script waiting on the task answers the cancelled task', async () => {
    await holdRunning();
    const waiting = t.app.inject({
      method: 'POST',
      url: '/api/fm-script',
      headers: auth,
      payload: { fmScript: 'PRINT waits' },
    });
    await until(() => t.queue.queuedCount === 1);
    const id = t.queue.list()[0]!.id;
    expect((await cancel(id)).statusCode).toBe(200);
    const answer = await waiting;
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({
      id,
      status: 'FAILURE',
      error: expect.stringMatching(/^CANCELLED/),
    });
  });

  it('409 TASK_RUNNING: a running script is never cut', async () => {
    const running = await holdRunning();
    const response = await cancel(running);
    expect(response.statusCode).toBe(409);
    expect(response.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'TASK_RUNNING',
      message: `Task ${running} is running; a running script is never cut`,
    });
    expect(t.queue.get(running)?.state).toBe('running');
    t.executor.release();
    const ended = await t.app.inject({ url: `/api/tasks/${running}?waitMs=5000`, headers: auth });
    expect(ended.json()).toMatchObject({ status: 'FINISHED' });
  });

  it('409 TASK_ENDED carries id and status: a finished task, and a cancelled one cancelled again', async () => {
    const done = await submit('PRINT done');
    await t.queue.waitForEnd(done, 5000);
    const finished = await cancel(done);
    expect(finished.statusCode).toBe(409);
    expect(finished.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'TASK_ENDED',
      message: `Task ${done} has already ended (FINISHED)`,
      id: done,
      status: 'FINISHED',
    });
    await holdRunning();
    const queued = await submit('PRINT never');
    expect((await cancel(queued)).statusCode).toBe(200);
    const again = await cancel(queued);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'TASK_ENDED',
      message: `Task ${queued} has already ended (FAILURE)`,
      id: queued,
      status: 'FAILURE',
    });
  });

  it('404 TASK_DOES_NOT_EXIST carries id and status', async () => {
    const response = await cancel(12345);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'TASK_DOES_NOT_EXIST',
      message: 'Task 12345 does not exist',
      id: 12345,
      status: 'TASK_DOES_NOT_EXIST',
    });
  });

  it('400 for an id that is not a task id, 401 without a token', async () => {
    const bad = await cancel('abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'INVALID_REQUEST',
      message: "path parameter 'id' must be a positive integer below 2^53",
    });
    await holdRunning();
    const queued = await submit('PRINT never');
    const anonymous = await cancel(queued, {});
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer');
    expect(anonymous.json()).toEqual({
      statusCode: 401,
      error: 'Unauthorized',
      code: 'UNAUTHORIZED',
      message: 'Missing bearer token: send "Authorization: Bearer <token>" from /api/authenticate',
    });
    expect(t.queue.get(queued)?.state).toBe('queued');
  });

  it('an Idempotency-Key replay of a cancelled task answers it and runs nothing', async () => {
    await holdRunning();
    const queued = await submit('PRINT once', { 'idempotency-key': 'order-7' });
    expect((await cancel(queued)).statusCode).toBe(200);
    const replay = await t.app.inject({
      method: 'POST',
      url: '/api/vendor-script',
      headers: { ...auth, 'idempotency-key': 'order-7' },
      payload: { vendorScript: 'PRINT once' },
    });
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toMatchObject({
      id: queued,
      status: 'FAILURE',
      error: expect.stringMatching(/^CANCELLED/),
    });
  });

  it('is in the OpenAPI document with its 200, 404 and 409 answers', async () => {
    const document = (await t.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown> };
    };
    const operation = document.paths['/api/tasks/{id}']!.delete!;
    expect(operation.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '404', '409', '500']);
    const conflict = JSON.stringify(operation.responses['409']);
    expect(conflict).toContain('TaskRunning');
    expect(conflict).toContain('TaskEnded');
    expect(JSON.stringify(operation.responses['404'])).toContain('TaskDoesNotExist');
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining(['TaskRunning', 'TaskEnded']),
    );
  });
});
