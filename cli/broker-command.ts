/**
 * `regbridge broker` (contract section 4): a store broker alone. Flags and REGBRIDGE_<FLAG>
 * variables are validated by one schema, every problem reported at once (exit code 2).
 */
import { type Command, Option } from 'commander';
import { z } from 'zod';
import { namespaceSchema } from '../bridge/contract/topics.ts';
import { type BrokerUser, loadUsersFile, parseUserSpec, StoreBroker } from '../broker/store-broker.ts';
import { parseConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { envName, listValue, onShutdownSignal, option, repeatable, reportStartError } from './options.ts';

const port = z.coerce.number().int().min(0).max(65535);

/** Commander gives `true` for a bare `--allow-anonymous`, a string from the flag's value or env. */
const flag = z.union([z.boolean(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'boolean') return value;
  const text = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  // An empty variable reads as unset: never allow anonymous clients by accident.
  if (['', '0', 'false', 'no', 'off'].includes(text)) return false;
  ctx.addIssue({ code: 'custom', message: 'expected true or false (1/0, yes/no, on/off)' });
  return z.NEVER;
});

/** Messages name the entry, never the spec: it holds a password. */
const userSpecs = z.array(z.string()).transform((specs, ctx) =>
  specs.flatMap((spec, index) => {
    try {
      return [parseUserSpec(spec)];
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `entry ${index + 1}: ${(error as Error).message}` });
      return [];
    }
  }),
);

const usersFile = z.string().transform((path, ctx): BrokerUser[] => {
  try {
    return loadUsersFile(path);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

export const brokerConfigSchema = z
  .object({
    port: port.default(1883),
    host: z.string().min(1).default('0.0.0.0'),
    wsPort: port.optional(),
    ns: namespaceSchema.default('pos'),
    user: userSpecs.default([]),
    users: usersFile.optional(),
    allowAnonymous: flag.default(false),
    redisUrl: z
      .url({ protocol: /^rediss?$/, error: 'expected redis://[user:password@]host:port[/db] or rediss://' })
      .optional(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .superRefine((config, ctx) => {
    const all = [...config.user, ...(config.users ?? [])];
    const names = new Set<string>();
    for (const user of all) {
      if (names.has(user.name))
        ctx.addIssue({ code: 'custom', path: ['user'], message: `user ${user.name} given twice` });
      names.add(user.name);
    }
    // No generated credentials: a store broker without users would accept nobody (docs/broker.md).
    if (all.length === 0 && !config.allowAnonymous) {
      ctx.addIssue({
        code: 'custom',
        message:
          'no users: give --user NAME:PASSWORD:ROLE (repeatable), --users FILE, or --allow-anonymous (anonymous clients are controllers)',
      });
    }
  });

export type BrokerConfig = Readonly<z.infer<typeof brokerConfigSchema>>;

interface BrokerFlags {
  port?: string;
  host?: string;
  wsPort?: string;
  ns?: string;
  user?: string[] | string;
  users?: string;
  allowAnonymous?: boolean | string;
  redisUrl?: string;
  logLevel?: string;
}

function brokerInput(flags: BrokerFlags, command: Command): Record<string, unknown> {
  // repeatable() wraps the REGBRIDGE_USER value in an array like one flag: split it here.
  const fromEnv = command.getOptionValueSource('user') === 'env' && Array.isArray(flags.user);
  const user = fromEnv ? listValue(flags.user?.[0]) : listValue(flags.user);
  const input: Record<string, unknown> = { ...flags, user };
  for (const key of Object.keys(input)) if (input[key] === undefined) delete input[key];
  return input;
}

/** Start errors whose message says it all: no stack. */
const PLAIN_ERRORS = new Set(['BrokerListenError', 'BrokerRedisError', 'UserSpecError']);

export function registerBrokerCommand(program: Command): void {
  program
    .command('broker')
    .description(
      'run a store broker alone (MQTT 3.1.1, per-role ACL, optional WebSocket and Redis clustering)',
    )
    .addOption(option('--port <port>', 'MQTT TCP port (0 picks a free one)').default(undefined, '1883'))
    .addOption(option('--host <host>', 'listen address').default(undefined, '0.0.0.0'))
    .addOption(option('--ws-port <port>', 'MQTT over WebSocket port (off unless given; 0 picks a free one)'))
    .addOption(
      option('--ns <namespace>', 'topic namespace the ACL is written for, may contain /').default(
        undefined,
        'pos',
      ),
    )
    .addOption(repeatable('--user <NAME:PASSWORD:ROLE>', 'a user; ROLE is device, controller or observer'))
    .addOption(option('--users <file>', 'users file: NAME:PASSWORD:ROLE lines, or a JSON array'))
    // An optional value rather than a boolean flag: commander turns a boolean flag on whenever its
    // variable exists, so REGBRIDGE_ALLOW_ANONYMOUS=false would have allowed anonymous clients.
    .addOption(
      new Option('--allow-anonymous [bool]', 'accept clients without user name, as controllers').env(
        envName('--allow-anonymous'),
      ),
    )
    .addOption(
      option('--redis-url <url>', 'share state with other instances through Redis (redis://, rediss://)'),
    )
    .addOption(
      option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent').default(undefined, 'info'),
    )
    .action(async (flags: BrokerFlags, command: Command) => {
      let config: BrokerConfig;
      try {
        config = parseConfig(brokerConfigSchema, brokerInput(flags, command));
      } catch (error) {
        reportStartError(command, error);
        return;
      }
      const logger = createLogger({ level: config.logLevel, name: 'regbridge-broker' });
      const broker = new StoreBroker({
        port: config.port,
        host: config.host,
        ...(config.wsPort !== undefined && { wsPort: config.wsPort }),
        ns: config.ns,
        users: [...config.user, ...(config.users ?? [])],
        allowAnonymous: config.allowAnonymous,
        ...(config.redisUrl && { redisUrl: config.redisUrl }),
        logger,
      });
      try {
        await broker.start();
      } catch (error) {
        if (error instanceof Error && PLAIN_ERRORS.has(error.name)) {
          console.error(`regbridge broker: ${error.message}`);
          process.exitCode = 2;
        } else {
          reportStartError(command, error);
        }
        return;
      }
      onShutdownSignal(() => broker.stop());
      const lines = [`broker listening on mqtt://${config.host}:${broker.port}`];
      if (broker.wsPort !== undefined) lines.push(`broker listening on ws://${config.host}:${broker.wsPort}`);
      logger.info({ port: broker.port, wsPort: broker.wsPort, host: config.host }, lines.join(', '));
      for (const line of lines) console.log(line);
    });
}
