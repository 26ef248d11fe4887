/**
 * The hooks the bridge suites repeat: per-test cleanups (afterEach, last first, a failing cleanup
 * never hides the test's own result) and a broker per suite on one fixture of support/brokers.ts.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BrokerFixture, RunningBroker } from './brokers.ts';

export type Cleanup = () => Promise<unknown>;

/** An array to push cleanups on while a test starts things; emptied after each test. */
export function cleanupsAfterEach(): Cleanup[] {
  const cleanups: Cleanup[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  return cleanups;
}

/**
 * Starts `fixture`'s broker for namespace `ns` before the suite (handing it to `started`), stops
 * it after; returns the suite's per-test cleanups.
 */
export function brokerPerSuite(
  fixture: BrokerFixture,
  ns: string,
  started: (broker: RunningBroker) => void,
): Cleanup[] {
  let broker: RunningBroker | undefined;
  beforeAll(async () => {
    broker = await fixture.start(ns);
    started(broker);
  });
  const cleanups = cleanupsAfterEach();
  afterAll(async () => {
    await broker?.stop();
  });
  return cleanups;
}
