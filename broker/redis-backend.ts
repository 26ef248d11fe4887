/**
 * Shared state for several store broker instances (`--redis-url`): mqemitter-redis fans every
 * message out to all instances, aedes-persistence-redis keeps retained messages, wills,
 * subscriptions and QoS 1/2 queues in Redis. aedes' `close()` closes the emitter but leaves the
 * persistence open, so close() here ends both and every Redis connection.
 */
import aedesPersistenceRedis from 'aedes-persistence-redis';
import type { Redis } from 'ioredis';
import mqemitterRedis from 'mqemitter-redis';
import type { Logger } from '../src/logger.ts';

import { BrokerRedisError } from './redis-error.ts';

export { BrokerRedisError };

/**
 * aedes-persistence-redis ships no types (see aedes-persistence-redis.d.ts, which is not shipped):
 * the declarations of this package name only the part the broker calls.
 */
export interface RedisPersistence {
  setup(broker: unknown): Promise<void>;
  destroy(): Promise<void>;
}

export interface RedisBackend {
  /** For `Aedes.createBroker({ mq, persistence })`. */
  readonly mq: unknown;
  readonly persistence: RedisPersistence;
  /** The URL without credentials, for logs and messages. */
  readonly safeUrl: string;
  /** Destroys the persistence (idempotent), closes the emitter and every connection. */
  close(): Promise<void>;
}

/** The parts of mqemitter-redis its typings leave out. */
interface MqRedis {
  pubConn: Redis;
  subConn: Redis;
  state: { on(event: 'error', listener: (error: Error) => void): void };
  close(callback: () => void): void;
}

export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(unparsable Redis URL)';
  }
}

function waitReady(conns: Redis[], timeoutMs: number, safeUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const pending = new Set(conns.filter((conn) => conn.status !== 'ready'));
    const cleanups: (() => void)[] = [];
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const cleanup of cleanups) cleanup();
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(
      () =>
        finish(new BrokerRedisError(`cannot reach Redis at ${safeUrl}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    if (pending.size === 0) {
      finish();
      return;
    }
    for (const conn of pending) {
      const onReady = (): void => {
        pending.delete(conn);
        if (pending.size === 0) finish();
      };
      // At start a refusal is final: better a clear error now than a broker that cannot work.
      const onError = (error: Error): void =>
        finish(new BrokerRedisError(`cannot reach Redis at ${safeUrl}: ${error.message}`));
      conn.on('ready', onReady);
      conn.on('error', onError);
      cleanups.push(() => {
        conn.off('ready', onReady);
        conn.off('error', onError);
      });
    }
  });
}

export async function createRedisBackend(
  url: string,
  logger: Logger,
  connectTimeoutMs = 5000,
): Promise<RedisBackend> {
  const safeUrl = redactRedisUrl(url);
  // matchEmptyLevels as aedes' own default emitter: `a/#` also matches `a` ([MQTT-4.7.1-2]).
  const mq = mqemitterRedis({ connectionString: url, matchEmptyLevels: true }) as unknown as MqRedis;
  // The persistence gets its own connection with the same options (URL, TLS, credentials).
  const conn = mq.pubConn.duplicate();
  const conns = [mq.pubConn, mq.subConn, conn];
  let closing = false;
  let lastLogged: string | undefined;
  const logError = (error: Error): void => {
    // ioredis retries forever and reports every attempt: log each distinct error once.
    if (closing || error.message === lastLogged) return;
    lastLogged = error.message;
    logger.error({ redis: safeUrl, err: error.message }, 'redis connection error');
  };
  // Without a listener on `state`, mqemitter-redis would throw its connection errors.
  mq.state.on('error', logError);
  conn.on('error', logError);
  for (const c of conns) c.on('ready', () => (lastLogged = undefined));

  const persistence = aedesPersistenceRedis({ conn });
  let destroyed = false;
  const close = async (): Promise<void> => {
    closing = true;
    if (!destroyed) {
      destroyed = true;
      try {
        await persistence.destroy();
      } catch (error) {
        logger.warn({ err: (error as Error).message }, 'closing the redis persistence failed');
      }
    }
    await new Promise<void>((resolve) => mq.close(() => resolve()));
    // destroy() and close() ask politely (QUIT); make sure no socket is left whatever happened.
    for (const c of conns) if (c.status !== 'end') c.disconnect();
  };
  try {
    await waitReady(conns, connectTimeoutMs, safeUrl);
  } catch (error) {
    closing = true;
    for (const c of conns) c.disconnect();
    throw error;
  }
  return { mq, persistence, safeUrl, close };
}
