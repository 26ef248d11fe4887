/**
 * The broker connection flags shared by `fanout` and `watch` (declared once, cli/flags.ts), the
 * controller they configure, and the exit-code convention of the controller commands: 2 for
 * usage and connection errors.
 */
import type { z } from 'zod';
import { StoreController } from '../controller/store-controller.ts';
import { CONTROLLER_DEFAULTS } from '../controller/types.ts';
import { parseConfig, positiveDuration, userSpecSchema } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { readPem } from '../src/tls.ts';
import {
  caFileFlag,
  controllerNsFlag,
  logLevelFlag,
  mqttReconnectMaxFlag,
  requiredMqttUrlFlag,
} from './common-flags.ts';
import { flag, flagSchema, labeler } from './flags.ts';

/** The broker connection flags of `fanout` and `watch`; their tables spread these. */
export const connectionFlags = {
  mqttUrl: requiredMqttUrlFlag(
    'store broker: mqtt://USER:PASSWORD@host:port (mqtts://, ws://, wss://); a comma-separated list fails over between instances',
    'required: the store broker, e.g. mqtt://USER:PASSWORD@host:1883 (mqtts://, ws://, wss:// too; a comma-separated list for several instances)',
  ),
  user: flag('--user <NAME:PASSWORD>', 'broker user (instead of credentials in --mqtt-url)', userSpecSchema),
  mqttCa: caFileFlag('--mqtt-ca <file>', 'PEM CA certificate(s) to trust for an mqtts:// or wss:// broker'),
  ns: controllerNsFlag(),
  settle: flag(
    '--settle <duration>',
    'after subscribing, wait this long without news for retained states',
    positiveDuration,
    { default: `${CONTROLLER_DEFAULTS.settleMs}ms` },
  ),
  connectTimeout: flag('--connect-timeout <duration>', 'first connection to the broker', positiveDuration, {
    default: `${CONTROLLER_DEFAULTS.connectTimeoutMs / 1000}s`,
  }),
  mqttReconnectMax: mqttReconnectMaxFlag(
    CONTROLLER_DEFAULTS.reconnectFirstMs,
    CONTROLLER_DEFAULTS.reconnectMaxMs,
  ),
  logLevel: logLevelFlag('warn'),
};

export const connectionSchema = flagSchema(connectionFlags);
export type ConnectionConfig = z.infer<typeof connectionSchema>;

/** For code and tests: validates an input object as `fanout`/`watch` would (undefined keys dropped). */
export function parseConnection<S extends z.ZodType>(
  schema: S,
  input: Record<string, unknown>,
): Readonly<z.infer<S>> {
  const defined = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
  return parseConfig(schema, defined, [], labeler(connectionFlags));
}

export function controllerFor(config: ConnectionConfig, logger: Logger): StoreController {
  return new StoreController({
    url: config.mqttUrl,
    ...(config.user ? { username: config.user.name, password: config.user.password } : {}),
    ...(config.mqttCa !== undefined && { ca: readPem(config.mqttCa) }),
    ns: config.ns,
    logger,
    settleMs: config.settle,
    connectTimeoutMs: config.connectTimeout,
    reconnectMaxMs: config.mqttReconnectMax,
  });
}
