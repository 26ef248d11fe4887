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

/**
 * A request URL as a log line may show it: the values of its query are censored, since a query
 * may carry a ticket or a token someone put there (docs/security.md); the names stay.
 */
export function loggableUrl(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const names = url
    .slice(query + 1)
    .split('&')
    .map((pair) => `${pair.split('=', 1)[0]}=[redacted]`);
  return `${url.slice(0, query)}?${names.join('&')}`;
}

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** fastify's request serializer, with the query censored. */
function requestSerializer(request: LoggedRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: loggableUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: 'info',
      ...options,
      serializers: { req: requestSerializer, ...options.serializers },
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    destination as pino.DestinationStream,
  );
}

export type { Logger };
