/** The options of StoreBroker (broker/store-broker.ts re-exports this type). */
import type { Logger } from '../src/logger.ts';
import type { BrokerLimits } from './limits.ts';
import type { BrokerUser } from './users.ts';

export interface StoreBrokerOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Listen address of both listeners; default 0.0.0.0. */
  host?: string;
  /** MQTT over WebSocket, off unless given; 0 picks a free one. */
  wsPort?: number;
  /** The topic namespace the ACL is written for (`pos`, `stores/042`). */
  ns: string;
  users: BrokerUser[];
  /** Clients without a user name are accepted, as controllers. */
  allowAnonymous?: boolean;
  /** Share state with other instances through this Redis (redis:// or rediss://). */
  redisUrl?: string;
  logger: Logger;
  /** The flag named when the TCP port cannot be bound; default `--port`. */
  portFlag?: string;
  /** The flag named when the WebSocket port cannot be bound; default `--ws-port`. */
  wsPortFlag?: string;
  /**
   * MQTT over TLS on its own port (0 picks a free one). With `clientCa`, a client certificate
   * signed by that CA logs in as the device named by its CN, without a password.
   */
  tls?: {
    port: number;
    cert: Buffer | string;
    key: Buffer | string;
    clientCa?: Buffer | string;
    /** The flag named when the port cannot be bound; default `--tls-port`. */
    portFlag?: string;
  };
  /** Limits before login; each defaults to DEFAULT_BROKER_LIMITS (broker/limits.ts). */
  limits?: Partial<BrokerLimits>;
}
