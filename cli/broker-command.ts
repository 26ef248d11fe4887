/**
 * `regbridge broker` (docs/broker.md): a store broker alone. Flags and REGBRIDGE_<FLAG>
 * variables are validated by one schema, every problem reported at once (exit code 2).
 */
import type { Command } from 'commander';
import * as z from 'zod';
import { DEFAULT_BROKER_LIMITS, loadUsersFile, parseUserSpec, StoreBroker } from '../broker/store-broker.ts';
import { port, positiveDuration, wholeNumber } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import {
  connectTimeoutFlag,
  maxAwaitingPubrelFlag,
  maxConnectionsFlag,
  maxPacketBytesFlag,
  maxPendingPerAddressFlag,
  maxReportBytesFlag,
  maxRetainedStatusesFlag,
  maxSessionInflightFlag,
} from './broker-limit-flags.ts';
import { brokerTlsFlags, brokerTlsOption, brokerTlsProblems } from './broker-tls-flags.ts';
import { indexedCommand } from './command-index.ts';
import { hostValue, logLevelFlag, nsFlag } from './common-flags.ts';
import { addFlags, booleanValue, flag, flagSchema, parsedBy, parseFlags, repeatableFlag } from './flags.ts';
import { cliLogger } from './logging.ts';
import { onShutdownSignal, reportStartError } from './options.ts';

/** Messages never echo the spec: it holds a password. */
const userSpec = parsedBy(parseUserSpec);

/** The path is kept: SIGHUP reads the file again. */
const usersFile = parsedBy((path) => ({ path, users: loadUsersFile(path) }));

export const brokerFlags = {
  port: flag('--port <port>', 'MQTT TCP port (0 picks a free one)', port, { default: '1883' }),
  host: flag('--host <host>', 'listen address', hostValue, { default: '0.0.0.0' }),
  wsPort: flag('--ws-port <port>', 'MQTT over WebSocket port (0 picks a free one)', port, {
    defaultHelp: 'off',
  }),
  ns: nsFlag('topic namespace the ACL is written for, may contain /'),
  user: repeatableFlag(
    '--user <NAME:PASSWORD:ROLE>',
    'a user; ROLE is device, controller or observer',
    userSpec,
  ),
  users: flag('--users <file>', 'users file: NAME:PASSWORD:ROLE lines, or a JSON array', usersFile),
  // An optional value rather than a switch, so that REGBRIDGE_ALLOW_ANONYMOUS=false and
  // `--allow-anonymous false` both mean false; a bare `--allow-anonymous` is true.
  allowAnonymous: flag(
    '--allow-anonymous [bool]',
    'accept clients without user name, as controllers',
    booleanValue,
    { default: false },
  ),
  redisUrl: flag(
    '--redis-url <url>',
    'share state with other instances through Redis (redis://, rediss://)',
    z.url({ protocol: /^rediss?$/, error: 'expected redis://[user:password@]host:port[/db] or rediss://' }),
  ),
  maxPacketBytes: maxPacketBytesFlag('max-packet-bytes'),
  connectTimeout: connectTimeoutFlag('connect-timeout'),
  maxConnections: maxConnectionsFlag('max-connections'),
  maxPendingPerAddress: maxPendingPerAddressFlag('max-pending-per-address'),
  maxRetainedStatuses: maxRetainedStatusesFlag('max-retained-statuses'),
  maxAwaitingPubrel: maxAwaitingPubrelFlag('max-awaiting-pubrel'),
  maxReportBytes: maxReportBytesFlag('max-report-bytes'),
  maxSessionInflight: maxSessionInflightFlag('max-session-inflight'),
  authMaxFailures: flag(
    '--auth-max-failures <n>',
    'failed logins per address, and per user name, within --auth-window before refusals',
    wholeNumber(1),
    { default: String(DEFAULT_BROKER_LIMITS.loginMaxFailures) },
  ),
  authWindow: flag('--auth-window <duration>', 'window of --auth-max-failures', positiveDuration, {
    default: `${DEFAULT_BROKER_LIMITS.loginWindowMs / 1000}s`,
  }),
  ...brokerTlsFlags,
  logLevel: logLevelFlag('info'),
};

export const brokerConfigSchema = flagSchema(brokerFlags).superRefine((config, ctx) => {
  const all = [...config.user, ...(config.users?.users ?? [])];
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

/**
 * SIGHUP: the users file is read again; clients whose entry did not change stay connected
 * (docs/broker.md, "Users file"). A file with a problem changes nothing and is logged.
 */
function reloadUsers(broker: StoreBroker, config: BrokerConfig, logger: Logger): void {
  if (!config.users) {
    logger.warn('SIGHUP: no --users file to reload');
    return;
  }
  try {
    broker.reloadUsers([...config.user, ...loadUsersFile(config.users.path)]);
  } catch (error) {
    logger.error(
      { err: (error as Error).message },
      'SIGHUP: users file not reloaded, the previous users stay',
    );
  }
}

/** Start errors whose message says it all: no stack. */
const PLAIN_ERRORS = new Set(['BrokerListenError', 'BrokerRedisError', 'UserSpecError']);

export function registerBrokerCommand(program: Command): void {
  const command = indexedCommand(program, 'broker');
  addFlags(command, brokerFlags).action(async (_flags: unknown, command: Command) => {
    let config: BrokerConfig;
    let tls: ReturnType<typeof brokerTlsOption>;
    try {
      config = parseFlags(command, brokerFlags, brokerConfigSchema, { extra: brokerTlsProblems });
      tls = brokerTlsOption({ ...config, port: config.tlsPort });
    } catch (error) {
      reportStartError(command, error);
      return;
    }
    const logger = cliLogger(config.logLevel, 'regbridge-broker');
    const broker = new StoreBroker({
      port: config.port,
      host: config.host,
      ...(config.wsPort !== undefined && { wsPort: config.wsPort }),
      ns: config.ns,
      users: [...config.user, ...(config.users?.users ?? [])],
      allowAnonymous: config.allowAnonymous,
      ...(config.redisUrl && { redisUrl: config.redisUrl }),
      ...(tls && { tls }),
      limits: {
        maxPacketBytes: config.maxPacketBytes,
        connectTimeoutMs: config.connectTimeout,
        maxConnections: config.maxConnections,
        maxPendingPerAddress: config.maxPendingPerAddress,
        maxRetainedStatuses: config.maxRetainedStatuses,
        maxAwaitingPubrel: config.maxAwaitingPubrel,
        maxReportBytes: config.maxReportBytes,
        maxSessionInflight: config.maxSessionInflight,
        loginMaxFailures: config.authMaxFailures,
        loginWindowMs: config.authWindow,
      },
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
    process.on('SIGHUP', () => reloadUsers(broker, config, logger));
    const lines = [`broker listening on mqtt://${config.host}:${broker.port}`];
    if (broker.tlsPort !== undefined)
      lines.push(`broker listening on mqtts://${config.host}:${broker.tlsPort}`);
    if (broker.wsPort !== undefined) lines.push(`broker listening on ws://${config.host}:${broker.wsPort}`);
    logger.info(
      { port: broker.port, tlsPort: broker.tlsPort, wsPort: broker.wsPort, host: config.host },
      lines.join(', '),
    );
    for (const line of lines) console.log(line);
  });
}
