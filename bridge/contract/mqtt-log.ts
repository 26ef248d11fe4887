/**
 * How MQTT clients log: mqtt.js logs every packet through `debug`, at a cost even with DEBUG unset
 * (docs/benchmarks.md, "Fan-out at scale"), so clients get a no-op `log` unless DEBUG asks for
 * mqtt.js's log (`DEBUG=mqttjs*` or `*`).
 */
import type { IClientOptions, MqttClient } from 'mqtt';
import type { Logger } from 'pino';

const noop = (): void => {};

export function mqttLogOption(env: NodeJS.ProcessEnv = process.env): Pick<IClientOptions, 'log'> {
  const debug = env.DEBUG ?? '';
  return /mqttjs|(^|,)\s*\*/.test(debug) ? {} : { log: noop };
}

/**
 * Logs the client's errors. A repeat of the last one (the broker away: one per reconnect
 * attempt) goes to debug, not a warning each time. Devices and controllers use it alike. Returns
 * the reset for a new connection.
 */
export function logClientErrors(
  client: MqttClient,
  logger: Logger,
  url: () => string,
  /** Answers that are part of the normal path (a broker refusing MQTT 5): debug, never a warning. */
  expected: (error: Error) => boolean = () => false,
): () => void {
  let last: string | undefined;
  client.on('error', (error: Error & { code?: string | number }) => {
    const message = error.message;
    const level = message === last || expected(error) ? 'debug' : 'warn';
    last = message;
    logger[level]({ url: url(), err: message, code: error.code }, 'MQTT error');
  });
  return () => {
    last = undefined;
  };
}
