/**
 * Tokens on the controller service (issue 26 items 5 and 12), over real HTTP against a real
 * broker: the event stream opens with a single-use ticket, a token in a URL is never taken, no
 * ticket or token reaches the request log, logout revokes at once and ends the session's
 * streams, a stream ends when its token expires, and each user holds at most
 * --max-event-streams streams. Device logout through its app.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningControllerService } from '../../cli/controller-service.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { api, login, startService } from '../support/controller-service.ts';
import { readEventStream } from '../support/event-stream.ts';
import { bearer, login as deviceLogin, startTestApp } from '../support/http.ts';
import { memoryLogger } from '../support/loggers.ts';

const ns = `stores/tickets${randomUUID().slice(0, 6)}`;
let broker: RunningBroker;
let service: RunningControllerService;
const { logger, lines } = memoryLogger('info');

beforeAll(async () => {
  broker = await brokersByName.embedded.start(ns);
  service = await startService(broker, ns, { logger, settings: { maxEventStreams: 2 } });
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
});

const url = (path: string): string => `http://127.0.0.1:${service.httpPort}${path}`;

async function ticketFor(token: string): Promise<string> {
  const answer = await api(service.app, token, 'POST', '/api/events/ticket');
  expect(answer.statusCode).toBe(200);
  expect(answer.body).toEqual({ ticket: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expiresIn: 30 });
  return answer.body.ticket;
}

/** Opens a stream with a ticket over real HTTP; resolves once it has said it is connected. */
async function openStream(ticket: string) {
  const response = await fetch(url(`/api/events?ticket=${ticket}`));
  expect(response.status).toBe(200);
  const stream = readEventStream(response);
  await stream.readUntil(/: connected\n\n/);
  return stream;
}

/** Resolves once the server has ended the stream. */
async function ended(stream: ReturnType<typeof readEventStream>): Promise<void> {
  await expect(stream.readUntil(/never written/)).rejects.toThrow(/stream ended/);
}

describe('event tickets', () => {
  it('a ticket opens one stream; used again, unknown or without one it is 401', async () => {
    const token = await login(service.app);
    const ticket = await ticketFor(token);
    const stream = await openStream(ticket);
    const again = await fetch(url(`/api/events?ticket=${ticket}`));
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    expect((await fetch(url(`/api/events?ticket=${'x'.repeat(43)}`))).status).toBe(401);
    expect((await fetch(url('/api/events'))).status).toBe(401);
    expect((await api(service.app, undefined, 'POST', '/api/events/ticket')).statusCode).toBe(401);
    await stream.cancel();
  });

  it('a bearer token in a URL is never taken, on any route', async () => {
    const token = await login(service.app);
    for (const path of ['/api/events', '/api/devices', '/api/audit', '/api/jobs', '/api/jobs/x']) {
      const answer = await fetch(url(`${path}?access_token=${token}`));
      expect(answer.status, path).toBe(401);
      expect(((await answer.json()) as { code: string }).code).toBe('UNAUTHORIZED');
    }
    const logged = JSON.stringify(lines);
    expect(logged).toContain('access_token=[redacted]');
    expect(logged).not.toContain(token);
  });

  it('no ticket reaches the request log', async () => {
    const ticket = await ticketFor(await login(service.app));
    const stream = await openStream(ticket);
    await stream.cancel();
    const logged = JSON.stringify(lines);
    expect(logged).toContain('/api/events?ticket=[redacted]');
    expect(logged).not.toContain(ticket);
  });

  it('logout revokes the token at once and ends the streams it opened', async () => {
    const token = await login(service.app);
    const other = await login(service.app);
    const stream = await openStream(await ticketFor(token));
    const kept = await openStream(await ticketFor(other));
    const out = await api(service.app, token, 'POST', '/api/logout');
    expect(out.statusCode).toBe(204);
    expect(out.body).toBe('');
    await ended(stream);
    expect((await api(service.app, token, 'GET', '/api/devices')).statusCode).toBe(401);
    expect((await api(service.app, token, 'POST', '/api/logout')).statusCode).toBe(401);
    // Another session of the same user keeps its stream and its token.
    expect((await api(service.app, other, 'GET', '/api/devices')).statusCode).toBe(200);
    await kept.readUntil(/: connected\n\n/);
    const audit = await api(service.app, other, 'GET', '/api/audit?limit=5');
    expect(audit.body.entries.map((e: { action: string }) => e.action)).toContain('logout');
    await kept.cancel();
  });

  it('a ticket issued before a logout opens nothing', async () => {
    const token = await login(service.app);
    const ticket = await ticketFor(token);
    await api(service.app, token, 'POST', '/api/logout');
    expect((await fetch(url(`/api/events?ticket=${ticket}`))).status).toBe(401);
  });

  it('each user holds at most --max-event-streams streams; a closed one makes room', async () => {
    const token = await login(service.app);
    const first = await openStream(await ticketFor(token));
    const second = await openStream(await ticketFor(token));
    const third = await fetch(url(`/api/events?ticket=${await ticketFor(token)}`));
    expect(third.status).toBe(429);
    expect(await third.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'TOO_MANY_EVENT_STREAMS',
      message: 'Too many event streams open for this user: close one first',
    });
    await api(service.app, token, 'POST', '/api/logout');
    await Promise.all([ended(first), ended(second)]);
    const fresh = await login(service.app);
    const reopened = await openStream(await ticketFor(fresh));
    await reopened.cancel();
  });
});

describe('token expiry', () => {
  it('a stream ends when the token it was opened with expires', async () => {
    const short = await startService(broker, ns, { settings: { tokenTtl: 1 } });
    try {
      const token = await login(short.app);
      const ticket = (await api(short.app, token, 'POST', '/api/events/ticket')).body.ticket;
      const response = await fetch(`http://127.0.0.1:${short.httpPort}/api/events?ticket=${ticket}`);
      const stream = readEventStream(response);
      await stream.readUntil(/: connected\n\n/);
      const opened = Date.now();
      await ended(stream);
      expect(Date.now() - opened).toBeLessThan(5_000);
    } finally {
      await short.stop();
    }
  });
});

describe('device logout', () => {
  it('POST /api/logout revokes the device token at once', async () => {
    const device = await startTestApp();
    try {
      const token = await deviceLogin(device.app);
      expect(
        (await device.app.inject({ method: 'GET', url: '/api/tasks', headers: bearer(token) })).statusCode,
      ).toBe(200);
      const out = await device.app.inject({ method: 'POST', url: '/api/logout', headers: bearer(token) });
      expect(out.statusCode).toBe(204);
      expect(
        (await device.app.inject({ method: 'GET', url: '/api/tasks', headers: bearer(token) })).statusCode,
      ).toBe(401);
      expect((await device.app.inject({ method: 'POST', url: '/api/logout' })).statusCode).toBe(401);
    } finally {
      await device.close();
    }
  });
});
