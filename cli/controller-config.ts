/**
 * `regbridge controller`'s flags, declared once (cli/flags.ts; docs/controller.md): validated once
 * with every problem reported, then frozen. TLS files are checked here, so a missing one is a
 * configuration error.
 */

import * as z from 'zod';
import { isMultiStore, storeLinkTopicSchema } from '../bridge/contract/store-namespace.ts';
import { parseUserSpec } from '../broker/store-broker.ts';
import { APPROVAL_MODES, SCRIPT_DIALECTS } from '../controller/script-intake.ts';
import { DEFAULT_MAX_EVENT_STREAMS } from '../controller/service/event-stream.ts';
import { CONTROLLER_DEFAULTS } from '../controller/types.ts';
import { loadControllerUsersFile, parseControllerUser } from '../controller/users.ts';
import { port, userSpecSchema, wholeNumber } from '../src/config.ts';
import { restAuthFlags } from './auth-flags.ts';
import { maxSessionInflightFlag } from './broker-limit-flags.ts';
import {
  caFileFlag,
  controllerNsFlag,
  hostValue,
  logLevelFlag,
  mqttReconnectMaxFlag,
  mqttUrlFlag,
  tlsFlags,
  tlsProblems,
} from './common-flags.ts';
import { flag, flagSchema, parsedBy, repeatableFlag } from './flags.ts';
import { oidcFlags, oidcProblems } from './oidc-flags.ts';

/** Messages never echo the spec: it holds a password. */
const brokerUserSpec = parsedBy(parseUserSpec);

/** `--user NAME:PASSWORD[:ROLE[:SCOPE]]`; messages never echo the spec. */
const controllerUserSpec = parsedBy(parseControllerUser);

/** `--users FILE`: read once here so its problems are reported with the others; SIGHUP reads it again. */
const usersFileSchema = parsedBy((path) => {
  loadControllerUsersFile(path);
  return path;
});

export const controllerFlags = {
  port: flag('--port <port>', 'HTTP port of the API and the dashboard (0 picks a free one)', port, {
    default: '8090',
  }),
  host: flag('--host <host>', 'HTTP listen address', hostValue, { default: '0.0.0.0' }),
  mqttUrl: mqttUrlFlag(
    'the store broker: mqtt://USER:PASSWORD@host:port (mqtts://, ws://); a comma-separated list fails over',
  ),
  mqttUser: flag(
    '--mqtt-user <NAME:PASSWORD>',
    'broker user, instead of credentials in --mqtt-url',
    userSpecSchema,
  ),
  mqttCa: caFileFlag('--mqtt-ca <file>', 'PEM CA certificate(s) to trust for an mqtts:// or wss:// broker'),
  mqttReconnectMax: mqttReconnectMaxFlag(
    CONTROLLER_DEFAULTS.reconnectFirstMs,
    CONTROLLER_DEFAULTS.reconnectMaxMs,
  ),
  brokerPort: flag('--broker-port <port>', 'embed a store broker on this port instead of --mqtt-url', port, {
    defaultHelp: 'off',
  }),
  brokerHost: flag('--broker-host <host>', 'embedded broker listen address', hostValue, {
    default: '0.0.0.0',
  }),
  brokerUsers: repeatableFlag(
    '--broker-user <NAME:PASSWORD:ROLE>',
    'a user of the embedded broker (ROLE: device, controller, observer); every --user is a controller on it',
    brokerUserSpec,
  ),
  brokerMaxSessionInflight: maxSessionInflightFlag('broker-max-session-inflight'),
  ns: controllerNsFlag(),
  storeLinkTopic: flag(
    '--store-link-topic <topic>',
    "with --ns 'stores/+': the topic under each store's namespace where its link to the broker says 1 (up) or 0 (down), e.g. link/state (Mosquitto's bridge notifications)",
    storeLinkTopicSchema,
  ),
  users: repeatableFlag(
    '--user <NAME:PASSWORD[:ROLE[:SCOPE]]>',
    'who may log in to the API and the dashboard (ROLE: viewer, operator, author, approver, admin (default); SCOPE: group=G1,G2 or store=S1,S2); none: admin with a printed random password',
    controllerUserSpec,
  ),
  usersFile: flag(
    '--users <file>',
    'users file, one NAME:PASSWORD-OR-HASH:ROLE[:SCOPE] per line; SIGHUP reloads it',
    usersFileSchema,
  ),
  scriptDialect: flag(
    '--script-dialect <simulator|none>',
    "check every job's script against the simulator's commands before sending (none: registers speak another dialect)",
    z.enum(SCRIPT_DIALECTS),
    { default: 'simulator' },
  ),
  approval: flag(
    '--approval <library|all>',
    'which jobs wait for an approver: library (scripts marked requiresApproval) or all',
    z.enum(APPROVAL_MODES),
    { default: 'library' },
  ),
  db: flag(
    '--db <file>',
    'SQLite history of jobs, results and the audit trail (:memory: keeps none)',
    z.string().min(1),
    {
      default: './regbridge-controller.db',
    },
  ),
  historyDays: flag(
    '--history-days <days>',
    'delete jobs and webhook deliveries that ended more than this many days ago, once a day (audited)',
    wholeNumber(1, 36_500, 'a number of days'),
    { defaultHelp: 'off' },
  ),
  ...restAuthFlags,
  ...oidcFlags,
  maxEventStreams: flag(
    '--max-event-streams <n>',
    'open event streams (GET /api/events) per user; one more is refused 429',
    wholeNumber(1),
    { default: String(DEFAULT_MAX_EVENT_STREAMS) },
  ),
  ...tlsFlags('serve the API and the dashboard over HTTPS instead of HTTP'),
  logLevel: logLevelFlag('info'),
};

export const controllerConfigSchema = flagSchema(controllerFlags);
export type ControllerConfig = Readonly<z.infer<typeof controllerConfigSchema>>;

/** Checks across flags, on the raw input, so they are reported with the schema's own problems. */
export function controllerCrossProblems(input: Record<string, unknown>): string[] {
  const problems: string[] = [...tlsProblems(input), ...oidcProblems(input)];
  const hasUrl = input.mqttUrl !== undefined;
  const embedded = input.brokerPort !== undefined;
  if (hasUrl && embedded) problems.push('--broker-port: give either --mqtt-url or --broker-port, not both');
  if (input.storeLinkTopic !== undefined && !(typeof input.ns === 'string' && isMultiStore(input.ns)))
    problems.push("--store-link-topic: only with a namespace for many stores (--ns 'stores/+')");
  if (embedded && typeof input.ns === 'string' && isMultiStore(input.ns))
    problems.push(
      "--ns: a namespace for many stores ('stores/+') needs --mqtt-url (the head office's broker); an embedded broker serves one store",
    );
  if (!hasUrl && !embedded) {
    problems.push(
      '--mqtt-url: required: the store broker (mqtt://USER:PASSWORD@host:1883), or --broker-port P to embed one',
    );
  }
  if (embedded && input.mqttCa !== undefined)
    problems.push('--mqtt-ca: only with --mqtt-url (the embedded broker is reached over loopback)');
  if (embedded && input.mqttUser !== undefined)
    problems.push('--mqtt-user: only with --mqtt-url (the embedded broker needs none)');
  if (((input.brokerUsers as unknown[] | undefined)?.length ?? 0) > 0 && !embedded)
    problems.push('--broker-user: only with --broker-port (users of the embedded broker)');
  const names = new Set<string>();
  for (const spec of (input.users as unknown[] | undefined) ?? []) {
    const name = typeof spec === 'string' ? spec.split(':')[0] : undefined;
    if (name && names.has(name)) problems.push(`--user: user ${name} given twice`);
    if (name) names.add(name);
  }
  // Every --user is a controller on the embedded broker: the same name there is given twice.
  for (const spec of (input.brokerUsers as unknown[] | undefined) ?? []) {
    const name = typeof spec === 'string' ? spec.split(':')[0] : undefined;
    if (name && names.has(name))
      problems.push(`--broker-user: user ${name} given twice (every --user is already a controller on it)`);
    if (name) names.add(name);
  }
  return problems;
}
