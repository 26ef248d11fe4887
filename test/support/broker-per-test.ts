/**
 * A store broker per test for the broker-limit suites: one controller user (`HQ`), the limits the
 * test asks for, and the raw clients the test opened dropped and the broker stopped after it.
 */
import { afterEach } from 'vitest';
import type { BrokerLimits, StoreBroker } from '../../broker/store-broker.ts';
import type { RawClient } from './raw-mqtt.ts';
import { storeBroker } from './store-brokers.ts';

export const HQ = { username: 'hq', password: 'hq-pw' };

export interface BrokerPerTest {
  /** Starts the test's broker (namespace `pos`). */
  start(limits?: Partial<BrokerLimits>): Promise<StoreBroker>;
  /** Stops it before the test ends (to start another). */
  stop(): Promise<void>;
  /** Raw clients to drop after the test. */
  readonly opened: RawClient[];
}

export function brokerPerTest(): BrokerPerTest {
  let broker: StoreBroker | undefined;
  const opened: RawClient[] = [];
  const stop = async (): Promise<void> => {
    await broker?.stop();
    broker = undefined;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((client) => client.drop()));
    await stop();
  });
  return {
    async start(limits = {}) {
      broker = storeBroker('pos', {
        users: [{ name: HQ.username, password: HQ.password, role: 'controller' }],
        limits,
      });
      await broker.start();
      return broker;
    },
    stop,
    opened,
  };
}
