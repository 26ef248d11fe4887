/**
 * Redis could not be reached when the broker started. Apart from redis-backend.ts so that a
 * broker without `--redis-url` never loads ioredis and its companions (store-broker.ts imports
 * the backend only when it needs one).
 */
export class BrokerRedisError extends Error {
  override readonly name = 'BrokerRedisError';
}
