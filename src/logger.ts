/** pino JSON logs. Secrets never reach a log line: these paths are censored wherever they appear. */
import { type Logger, type LoggerOptions, pino } from 'pino';

export const redactPaths = [
  'password',
  '*.password',
  'token',
  '*.token',
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'mqttUrl',
  '*.mqttUrl',
  'users',
  '*.users',
];

export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  return pino(
    { level: 'info', ...options, redact: { paths: redactPaths, censor: '[redacted]' } },
    destination as pino.DestinationStream,
  );
}

export type { Logger };
