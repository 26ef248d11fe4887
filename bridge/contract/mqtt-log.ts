/**
 * mqtt.js logs every packet through the `debug` package, and each call costs even with DEBUG
 * unset: 1-2% of a bridge's CPU and about 1% of the store controller's during a fan-out to
 * 10,000 registers (docs/benchmarks.md, "Fan-out at scale"). Clients get a no-op `log` unless
 * DEBUG asks for mqtt.js's log (`DEBUG=mqttjs*` or `*`), which then works as before.
 */
import type { IClientOptions } from 'mqtt';

const noop = (): void => {};

export function mqttLogOption(env: NodeJS.ProcessEnv = process.env): Pick<IClientOptions, 'log'> {
  const debug = env.DEBUG ?? '';
  return /mqttjs|(^|,)\s*\*/.test(debug) ? {} : { log: noop };
}
