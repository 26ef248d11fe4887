/**
 * One rule for every command's output (docs/decisions/command-line-conventions.md): human output (banners,
 * tables, reports, JSON documents) on stdout; logs on stderr, pretty on a terminal, JSON lines
 * otherwise (for log collectors and tests).
 */
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';
import { createLogger, type Logger } from '../src/logger.ts';

/** pino-pretty is loaded only for a terminal: under a service manager or in a pipe it is not used. */
const requirePretty = (): typeof PinoPretty => createRequire(import.meta.url)('pino-pretty');

export function cliLogger(
  level: string,
  name = 'regbridge',
  stderr: NodeJS.WriteStream = process.stderr,
): Logger {
  if (stderr.isTTY && level !== 'silent') {
    return createLogger({ level, name }, requirePretty()({ destination: 2, sync: true, colorize: true }));
  }
  return createLogger({ level, name }, stderr);
}
