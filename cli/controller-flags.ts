/**
 * The broker connection flags shared by `fanout` and `watch` (contract section 4: every flag
 * also from REGBRIDGE_<FLAG>), validated once with zod through parseConfig, and the exit-code
 * convention of the controller commands: 2 for usage and connection errors.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { mqttUrlSchema } from '../bridge/contract/broker-url.ts';
import { namespaceSchema } from '../bridge/contract/topics.ts';
import { StoreController } from '../controller/store-controller.ts';
import { parseConfig, userSpecSchema } from '../src/config.ts';
import { durationMs } from '../src/duration.ts';
import { createLogger, type Logger } from '../src/logger.ts';
import { option } from './options.ts';

export const durationSchema = z.string().transform((value, ctx) => {
  const ms = durationMs(value);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `not a positive duration: ${JSON.stringify(value)} (e.g. 60s, 500ms, 2m)`,
    });
    return z.NEVER;
  }
  return ms;
});

export const connectionSchema = z.object({
  mqttUrl: mqttUrlSchema(
    'required: the store broker, e.g. mqtt://USER:PASSWORD@host:1883 (mqtts://, ws://, wss:// too; a comma-separated list for several instances)',
  ),
  user: userSpecSchema.optional(),
  ns: namespaceSchema.default('pos'),
  settle: durationSchema.default(250),
  connectTimeout: durationSchema.default(10_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
});

export type ConnectionConfig = z.infer<typeof connectionSchema>;

export interface ConnectionFlags {
  mqttUrl?: string;
  user?: string;
  ns?: string;
  settle?: string;
  connectTimeout?: string;
  logLevel?: string;
}

export function addConnectionOptions(command: Command): Command {
  return command
    .addOption(
      option(
        '--mqtt-url <url>',
        'store broker: mqtt://USER:PASSWORD@host:port (mqtts://, ws://, wss://); a comma-separated list fails over between instances',
      ),
    )
    .addOption(option('--user <NAME:PASSWORD>', 'broker user (instead of credentials in --mqtt-url)'))
    .addOption(option('--ns <namespace>', 'MQTT topic namespace, may contain /').default(undefined, 'pos'))
    .addOption(
      option(
        '--settle <duration>',
        'after subscribing, wait this long without news for retained states',
      ).default(undefined, '250ms'),
    )
    .addOption(
      option('--connect-timeout <duration>', 'first connection to the broker').default(undefined, '10s'),
    )
    .addOption(
      option('--log-level <level>', 'logs (JSON, on stderr): fatal|error|warn|info|debug|silent').default(
        undefined,
        'warn',
      ),
    );
}

/** Drops undefined keys so zod defaults apply. */
export function definedOnly(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
}

export function parseConnection<S extends z.ZodType>(
  schema: S,
  input: Record<string, unknown>,
): Readonly<z.infer<S>> {
  return parseConfig(schema, definedOnly(input));
}

/** Logs go to stderr: stdout carries the table or the JSON document. */
export function stderrLogger(level: string): Logger {
  return createLogger({ level, name: 'regbridge' }, process.stderr);
}

export function controllerFor(config: ConnectionConfig, logger: Logger): StoreController {
  return new StoreController({
    url: config.mqttUrl,
    ...(config.user ? { username: config.user.name, password: config.user.password } : {}),
    ns: config.ns,
    logger,
    settleMs: config.settle,
    connectTimeoutMs: config.connectTimeout,
  });
}

/**
 * Usage errors (unknown flag, missing argument) exit 2 instead of commander's 1, so a script can
 * tell them from "a device did not finish" (1). Help and version still exit 0.
 */
export function usageErrorsExit2(command: Command): Command {
  return command.exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });
}
