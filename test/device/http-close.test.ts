/**
 * Stopping the HTTP side does not wait on a client: a reused keep-alive socket whose client
 * left a response body unread (Node 20 does not count it idle) is cut after the grace period.
 */
import { createReadStream } from 'node:fs';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { closeHttpApp } from '../../src/http-close.ts';

const apps: ReturnType<typeof Fastify>[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) app.server.closeAllConnections();
});

async function appWithPage(): Promise<{ app: ReturnType<typeof Fastify>; url: string }> {
  const app = Fastify();
  apps.push(app);
  app.get('/small', async () => ({ ok: true }));
  app.get('/page', (_request, reply) => {
    reply.type('text/html').send(createReadStream('controller/dashboard/index.html'));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  return { app, url: `http://127.0.0.1:${address.port}` };
}

describe('closeHttpApp', () => {
  it('cuts a keep-alive socket whose response body the client left unread', async () => {
    const { app, url } = await appWithPage();
    expect(await (await fetch(`${url}/small`)).json()).toEqual({ ok: true });
    // Held, so garbage collection cannot close the socket on the client's side.
    const page = await fetch(`${url}/page`);
    expect(page.status).toBe(200);
    // Without the cut, close waits on this client until the test's time-out.
    await closeHttpApp(app, 100);
    expect(app.server.listening).toBe(false);
    const left = await new Promise<number>((resolve) =>
      app.server.getConnections((_error: Error | null, count: number) => resolve(count)),
    );
    expect(left).toBe(0);
  });

  it('lets a request in flight finish within the grace period', async () => {
    const app = Fastify();
    apps.push(app);
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      app.get('/slow', async () => {
        resolve();
        await new Promise<void>((done) => {
          release = done;
        });
        return { done: true };
      });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    const answer = fetch(`http://127.0.0.1:${address.port}/slow`);
    await started;
    const closed = closeHttpApp(app, 60_000);
    release();
    await closed;
    const response = await answer;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ done: true });
  });
});
