/**
 * Reconnect backoff with jitter (bridge/contract/reconnect-backoff.ts, docs/mqtt.md "Connection,
 * reconnection and what is never lost"): the schedule as a pure function with an injected random
 * source; the driver on a stand-in client (fake timers only for its stable-connection timer); and
 * a real bridge against a real listener that drops every connection and then lets an in-process
 * aedes broker answer, asserting on the waits the bridge chose (its debug log lines), not on time.
 */
import { EventEmitter } from 'node:events';
import type { MqttClient } from 'mqtt';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type BackoffSchedule,
  backoffScheduleProblem,
  MAX_TIMER_MS,
  ReconnectBackoff,
  type ReconnectWait,
  reconnectDelay,
} from '../../bridge/contract/reconnect-backoff.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { type DroppingBroker, droppingBrokerPerSuite } from '../support/dropping-broker.ts';
import { memoryLogger, silent } from '../support/loggers.ts';
import { until } from '../support/waits.ts';

const DEFAULT: BackoffSchedule = { firstMs: 1000, maxMs: 30_000 };
const lowest = () => 0;
const highest = () => 1 - Number.EPSILON;

describe('reconnectDelay', () => {
  it('doubles the ceiling per consecutive failure up to the cap', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 50].map((attempt) => reconnectDelay(attempt, DEFAULT, highest));
    expect(ceilings).toEqual([999, 1999, 3999, 7999, 15_999, 29_999, 29_999, 29_999]);
  });

  it('draws each wait from [ceiling/2, ceiling) ("equal jitter")', () => {
    expect([1, 2, 3, 6].map((attempt) => reconnectDelay(attempt, DEFAULT, lowest))).toEqual([
      500, 1000, 2000, 15_000,
    ]);
    for (let i = 0; i < 1000; i++) {
      const attempt = 1 + (i % 8);
      const ceiling = Math.min(30_000, 1000 * 2 ** (attempt - 1));
      const wait = reconnectDelay(attempt, DEFAULT);
      expect(wait).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait).toBeLessThan(ceiling);
    }
  });

  it('spreads a fleet: the same attempt gets different waits from different draws', () => {
    const draws = [0, 0.25, 0.5, 0.75].map((r) => reconnectDelay(1, DEFAULT, () => r));
    expect(draws).toEqual([500, 625, 750, 875]);
  });

  it('keeps the fixed period of old with maxMs 0, and never returns 0 (mqtt.js: no reconnect)', () => {
    expect(reconnectDelay(9, { firstMs: 1000, maxMs: 0 }, highest)).toBe(1000);
    expect(reconnectDelay(1, { firstMs: 1, maxMs: 1 }, lowest)).toBe(1);
    expect(reconnectDelay(10_000, DEFAULT, highest)).toBe(29_999);
  });

  it('keeps a first delay of 0 as "never reconnect" instead of a 1 ms loop', () => {
    expect(reconnectDelay(1, { firstMs: 0, maxMs: 30_000 }, highest)).toBe(0);
    expect(reconnectDelay(7, { firstMs: 0, maxMs: 30_000 }, lowest)).toBe(0);
  });

  it('never draws a wait longer than a Node timer honours (a longer one would fire after 1 ms)', () => {
    const huge = { firstMs: 1000, maxMs: Number.MAX_SAFE_INTEGER };
    expect(reconnectDelay(40, huge, highest)).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(reconnectDelay(40, huge, lowest)).toBe(Math.floor(MAX_TIMER_MS / 2));
  });
});

describe('a schedule the backoff refuses (a cap between 0 and the first delay)', () => {
  it('names what is wrong, and accepts 0 (no backoff) and any cap from the first delay up', () => {
    expect(backoffScheduleProblem({ firstMs: 1000, maxMs: 999 })).toBe(
      'the longest reconnect wait must be 0 (no backoff) or at least the first delay (1000 ms), got 999 ms',
    );
    expect(backoffScheduleProblem({ firstMs: 1000, maxMs: 1 })).toMatch(/got 1 ms$/);
    expect(backoffScheduleProblem({ firstMs: -1, maxMs: 0 })).toBe(
      'the first reconnect delay must be >= 0 ms, got -1',
    );
    expect(backoffScheduleProblem({ firstMs: 1000, maxMs: Number.NaN })).toBe(
      'the longest reconnect wait must be >= 0 ms, got NaN',
    );
    for (const maxMs of [0, 1000, 30_000])
      expect(backoffScheduleProblem({ firstMs: 1000, maxMs })).toBeUndefined();
    expect(backoffScheduleProblem({ firstMs: 0, maxMs: 5 })).toBeUndefined(); // never reconnects
    expect(() => new ReconnectBackoff({ firstMs: 1000, maxMs: 500, stableMs: 60_000 })).toThrow(RangeError);
  });

  it('a device bridge refuses it when built, a store controller before it connects', async () => {
    const refused = () =>
      directBridge({
        url: 'mqtt://127.0.0.1:1',
        ns: 'backoff',
        deviceId: uniqueId('cap'),
        reconnectMaxMs: 500,
      });
    expect(refused).toThrow(RangeError);
    expect(refused).toThrow(
      'the longest reconnect wait must be 0 (no backoff) or at least the first delay (1000 ms), got 500 ms',
    );
    // Port 1 answers nothing: had it tried to connect, start() would fail with a connection error.
    const controller = new StoreController({
      url: 'mqtt://127.0.0.1:1',
      ns: 'backoff',
      logger: silent,
      reconnectMaxMs: 999,
    });
    const error = await controller.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe(
      'reconnectMaxMs: the longest reconnect wait must be 0 (no backoff) or at least the first delay (1000 ms), got 999 ms',
    );
  });
});

/** The parts of an mqtt.js client the driver touches. */
function standIn(): MqttClient & EventEmitter {
  return Object.assign(new EventEmitter(), {
    options: { reconnectPeriod: 1000 },
    connected: false,
    disconnecting: false,
  }) as unknown as MqttClient & EventEmitter;
}

describe('ReconnectBackoff on a client', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sets the growing waits at each attempt, reports them at each close, and resets once a connection lasted', () => {
    vi.useFakeTimers();
    const waits: ReconnectWait[] = [];
    const backoff = new ReconnectBackoff({
      ...DEFAULT,
      stableMs: 30_000,
      random: highest,
      onWait: (wait) => waits.push(wait),
    });
    const client = standIn();
    backoff.attach(client);
    expect(client.options.reconnectPeriod).toBe(999);
    client.emit('close'); // the first attempt failed
    for (let i = 0; i < 3; i++) {
      client.emit('reconnect');
      client.emit('close');
    }
    expect(waits).toEqual([
      { attempt: 1, delayMs: 999 },
      { attempt: 2, delayMs: 1999 },
      { attempt: 3, delayMs: 3999 },
      { attempt: 4, delayMs: 7999 },
    ]);
    // A connection dropped before it proved stable: the schedule goes on growing.
    client.emit('reconnect');
    client.emit('connect');
    vi.advanceTimersByTime(29_999);
    client.emit('close');
    expect(waits.at(-1)).toEqual({ attempt: 5, delayMs: 15_999 });
    // One that lasted stableMs: back to the first wait.
    client.emit('reconnect');
    client.emit('connect');
    vi.advanceTimersByTime(30_000);
    expect(client.options.reconnectPeriod).toBe(999);
    client.emit('close');
    expect(waits.at(-1)).toEqual({ attempt: 1, delayMs: 999 });
    // end(): nothing is retried, nothing reported; detach() leaves the client alone.
    Object.assign(client, { disconnecting: true });
    client.emit('close');
    expect(waits).toHaveLength(6);
    expect(backoff.nextAttempt).toEqual({ attempt: 1, inMs: 999 }); // the wait reported last
    client.emit('connect');
    expect(backoff.nextAttempt).toBeUndefined();
    backoff.detach();
    expect(client.listenerCount('reconnect') + client.listenerCount('close')).toBe(0);
  });

  it('with several brokers, tries each once at a delay before the waits grow', () => {
    const waits: ReconnectWait[] = [];
    const backoff = new ReconnectBackoff({
      ...DEFAULT,
      stableMs: 60_000,
      brokers: 3,
      random: highest,
      onWait: (wait) => waits.push(wait),
    });
    const client = standIn();
    backoff.attach(client);
    client.emit('close');
    for (let i = 0; i < 6; i++) {
      client.emit('reconnect');
      client.emit('close');
    }
    expect(waits.map((w) => w.delayMs)).toEqual([999, 999, 999, 1999, 1999, 1999, 3999]);
    expect(waits.map((w) => w.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    backoff.detach();
  });
});

const scheduled = (lines: Record<string, unknown>[]): ReconnectWait[] =>
  lines
    .filter((l) => l.msg === 'MQTT reconnect scheduled')
    .map((l) => ({ attempt: l.attempt as number, delayMs: l.delayMs as number }));

describe('the device bridge against a broker that drops every connection, then comes back', () => {
  let broker: DroppingBroker;
  const cleanups = droppingBrokerPerSuite((started) => {
    broker = started;
  });

  /** A bridge logging at debug into `lines`; its scheduled waits are read from there. */
  function bridgeWithLog(options: { reconnectStableMs?: number }) {
    const { logger, lines } = memoryLogger('debug');
    const device = directBridge({
      url: broker.url,
      ns: 'backoff',
      deviceId: uniqueId('backoff'),
      logger,
      reconnectPeriodMs: 40,
      reconnectMaxMs: 320,
      startTimeoutMs: 1,
      ...options,
    });
    cleanups.push(() => device.stop());
    const waits = () => scheduled(lines);
    return { ...device, lines, waits };
  }

  /** Each wait within [ceiling/2, ceiling) of its attempt, for first 40 ms and cap 320 ms. */
  function expectSchedule(waits: ReconnectWait[], firstAttempt: number): void {
    waits.forEach((wait, i) => {
      expect(wait.attempt).toBe(firstAttempt + i);
      const ceiling = Math.min(320, 40 * 2 ** (wait.attempt - 1));
      expect(wait.delayMs).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait.delayMs).toBeLessThan(ceiling);
    });
  }

  it('waits longer after each failed attempt up to the cap, and connects once the broker answers', async () => {
    const device = bridgeWithLog({ reconnectStableMs: 60_000 });
    await device.bridge.start(); // resolves at once (startTimeoutMs 1); retries go on
    await until(() => device.waits().length >= 6, 'six failed attempts');
    // The waits are really taken, not only logged: attempt n+1 reaches the listener at least
    // wait n after attempt n did (a lower bound, which load cannot break).
    const taken = device.waits();
    const accepts = broker.accepts;
    const gaps = accepts.slice(1, taken.length + 1).map((at, i) => at - accepts[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(5);
    for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(taken[i]!.delayMs - 2);
    // /health shows the attempt awaited and when it starts (docs/api.md, "Health").
    const waiting = device.bridge.health().reconnect;
    expect(waiting?.attempt).toBeGreaterThanOrEqual(6);
    expect(waiting?.inMs).toBeGreaterThanOrEqual(0);
    expect(waiting?.inMs).toBeLessThan(320);
    broker.dropping = false;
    await until(() => device.bridge.health().state === 'connected', 'the bridge to connect');
    expect(device.bridge.health().reconnect).toBeUndefined();
    const failed = device.waits();
    expectSchedule(failed, 1);

    // Dropped long before it proved stable (60 s): the next wait continues the schedule.
    device.bridge.simulateConnectionLoss();
    await until(() => device.waits().length > failed.length, 'the wait after the drop');
    const next = device.waits()[failed.length]!;
    expect(next.attempt).toBe(failed.at(-1)!.attempt + 1);
    expectSchedule([next], next.attempt);
    await until(() => device.bridge.health().state === 'connected', 'connected again');
  });

  it('starts again from the first wait once a connection has lasted', async () => {
    const device = bridgeWithLog({ reconnectStableMs: 50 });
    await device.bridge.start();
    await until(() => device.waits().length >= 4, 'four failed attempts');
    broker.dropping = false;
    await until(
      () => device.lines.some((l) => l.msg === 'MQTT connection stable; reconnect backoff reset'),
      'the connection to prove stable',
    );
    const before = device.waits().length;
    device.bridge.simulateConnectionLoss();
    await until(() => device.waits().length > before, 'the wait after the drop');
    const first = device.waits()[before]!;
    expectSchedule([first], 1);
    const lost = device.lines.find((l) => l.msg === 'MQTT connection lost; reconnecting');
    expect(lost?.reconnectInMs).toBe(first.delayMs);
    await until(() => device.bridge.health().state === 'connected', 'connected again');
  });

  it('the store controller waits longer after each failed reconnect too (first 1 s, doubling)', async () => {
    broker.dropping = false;
    const { logger, lines } = memoryLogger('debug');
    const controller = new StoreController({
      url: broker.url,
      ns: 'backoff',
      logger,
      settleMs: 10,
    });
    await controller.start();
    cleanups.push(() => controller.stop());
    broker.dropAll();
    await until(() => scheduled(lines).length >= 3, 'three scheduled reconnects', 15_000);
    const waits = scheduled(lines).slice(0, 3);
    expect(waits.map((w) => w.attempt)).toEqual([1, 2, 3]);
    waits.forEach((wait, i) => {
      const ceiling = 1000 * 2 ** i;
      expect(wait.delayMs).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait.delayMs).toBeLessThan(ceiling);
    });
    broker.dropping = false;
    await until(() => controller.connection === 'connected', 'the controller back', 15_000);
  });
});
