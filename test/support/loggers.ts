/**
 * Loggers for tests and benchmarks: silent, unless a variable names a level for debugging a
 * failing suite (TEST_LOG_LEVEL=debug npx vitest run test/<name>.test.ts). Built by the device's own
 * createLogger, so the redaction of secrets is the one the product uses.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.ts';

/** Devices, bridges, controllers and everything else a test starts in-process. */
export const silent: Logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** Store brokers (aedes) a test starts: their own variable, as they log every connection. */
export const brokerLogger: Logger = createLogger({ level: process.env.TEST_BROKER_LOG_LEVEL ?? 'silent' });

/** A logger at `level` whose lines land, parsed, in `lines` (tests that read what was logged). */
export function memoryLogger(level: string): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level }, destination), lines };
}
