/**
 * A store broker (broker/store-broker.ts) for one suite: loopback, a free port, one controller
 * and one device user, in memory or over Redis.
 */
import { StoreBroker } from '../../broker/store-broker.ts';
import type { StoreBrokerOptions } from '../../broker/store-broker-options.ts';
import { brokerLogger } from './loggers.ts';

/** The controller user of storeBroker(). */
export const CTL = { username: 'ctl', password: 'ctl-secret' };
/** The device user of storeBroker(): the register reg-1. */
export const DEV = { username: 'reg-1', password: 'reg-secret' };

export function storeBroker(ns: string, options: Partial<StoreBrokerOptions> = {}): StoreBroker {
  return new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns,
    users: [
      { name: CTL.username, password: CTL.password, role: 'controller' },
      { name: DEV.username, password: DEV.password, role: 'device' },
    ],
    logger: brokerLogger,
    ...options,
  });
}
