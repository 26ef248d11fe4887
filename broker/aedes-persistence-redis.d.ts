/** aedes-persistence-redis 12 ships no types: the part of its API the store broker uses. */
declare module 'aedes-persistence-redis' {
  import type { Redis } from 'ioredis';

  namespace aedesPersistenceRedis {
    interface Options {
      /** An existing ioredis connection (else the options are ioredis options). */
      conn?: Redis;
      maxSessionDelivery?: number;
      packetTTL?: (packet: unknown) => number;
    }
    interface Persistence {
      setup(broker: unknown): Promise<void>;
      destroy(): Promise<void>;
    }
  }

  function aedesPersistenceRedis(options?: aedesPersistenceRedis.Options): aedesPersistenceRedis.Persistence;
  export = aedesPersistenceRedis;
}
