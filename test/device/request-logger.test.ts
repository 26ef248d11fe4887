/**
 * The REST app's lazy per-request loggers (src/request-logger.ts): what a request logs reads as
 * a pino child's line (its request id bound), and nothing is built for levels that are off.
 */
import { expect, it } from 'vitest';
import { lazyChildLoggerFactory } from '../../src/request-logger.ts';
import { memoryLogger } from '../support/loggers.ts';

const factory = (parent: unknown, bindings: Record<string, unknown>, options = {}) =>
  // biome-ignore lint/suspicious/noExplicitAny: fastify's factory signature, called directly
  (lazyChildLoggerFactory as any).call(undefined, parent, bindings, options, undefined);

it('writes what a pino child writes, with its bindings and redaction', async () => {
  const { logger, lines } = memoryLogger('info');
  const child = factory(logger, { reqId: 'req-1' });
  child.info({ authorization: 'Bearer secret' }, 'hello');
  child.debug('not written');
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 30, reqId: 'req-1', msg: 'hello', authorization: '[redacted]' });
  expect(child.level).toBe('info');
  expect(child.isLevelEnabled('debug')).toBe(false);
});

it('honours a level of its own and a change of level', async () => {
  const { logger, lines } = memoryLogger('info');
  const quiet = factory(logger, { reqId: 'req-2' }, { level: 'error' });
  quiet.warn('not written');
  quiet.error('written');
  const loud = factory(logger, { reqId: 'req-3' });
  loud.level = 'debug';
  loud.debug('written too');
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
    ['req-2', 'written'],
    ['req-3', 'written too'],
  ]);
});

it('a silent logger writes nothing', async () => {
  const { logger, lines } = memoryLogger('silent');
  const child = factory(logger, { reqId: 'req-4' });
  child.fatal('no');
  child.error('no');
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines).toHaveLength(0);
});
