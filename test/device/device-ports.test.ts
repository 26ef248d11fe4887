/**
 * Defaulted ports that are taken (1883 by a system Mosquitto, say) move to free ones so that
 * `npm start` works anywhere; ports given explicitly stay errors that name their flag.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { silent } from '../support/loggers.ts';

const logger = silent;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function blockPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

function config(port: number, brokerPort: number) {
  return parseServeConfig({
    deviceId: 'ports-1',
    port,
    host: '127.0.0.1',
    brokerPort,
    brokerHost: '127.0.0.1',
    users: ['admin:pw'],
    logLevel: 'silent',
  });
}

describe('ports that are taken', () => {
  it('moves defaulted ports to free ones and says so', async () => {
    const taken = await blockPort();
    const device: RunningDevice = await startDevice(config(taken, taken), {
      logger,
      freePortIfTaken: { http: true, broker: true },
    });
    cleanups.push(() => device.stop());
    expect(device.httpPort).not.toBe(taken);
    expect(device.brokerPort).not.toBe(taken);
    expect(device.portFallbacks).toEqual([
      `MQTT port ${taken} was taken (pass --broker-port to choose one)`,
      `HTTP port ${taken} was taken (pass --port to choose one)`,
    ]);
    const health = (await (await fetch(`http://127.0.0.1:${device.httpPort}/health`)).json()) as {
      mqtt: { state: string };
    };
    expect(health.mqtt.state).toBe('connected');
  });

  it('keeps an explicitly given port an error naming its flag', async () => {
    const taken = await blockPort();
    await expect(startDevice(config(0, taken), { logger })).rejects.toThrow(/--broker-port/);
    await expect(
      startDevice(config(taken, 0), { logger, freePortIfTaken: { broker: true } }),
    ).rejects.toThrow(/--port/);
  });
});
