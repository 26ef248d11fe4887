/**
 * `regbridge serve`'s flags, declared once (cli/flags.ts): the commander options, their
 * REGBRIDGE_<FLAG> variables, the help text with defaults and the one configuration schema
 * (docs/api.md, "Command line") all come from `serveFlags`. Validated once with every problem
 * reported at once, then frozen.
 */

import { X509Certificate } from 'node:crypto';
import * as z from 'zod';
import { BRIDGE_DEFAULTS } from '../bridge/bridge-options.ts';
import { attributeFlagSchema, attributeListProblems } from '../bridge/contract/attributes.ts';
import { idSchema, installationSchema } from '../bridge/contract/topics.ts';
import {
  type DeviceCoreConfig,
  defaultDeviceId,
  duration,
  durationIn,
  parseConfig,
  port,
  serviceUserSpecSchema,
  wholeNumber,
} from '../src/config.ts';
import { EXECUTOR_DEFAULTS } from '../src/executors/executor.ts';
import { DEFAULT_REQUEST_ID_MEMORY } from '../src/tasks/request-ids.ts';
import { DEFAULT_MAX_SCRIPT_BYTES } from '../src/tasks/script-text.ts';
import { pemProblem, readPem } from '../src/tls.ts';
import { restAuthFlags } from './auth-flags.ts';
import {
  connectTimeoutFlag,
  maxConnectionsFlag,
  maxPacketBytesFlag,
  maxPendingPerAddressFlag,
  maxSessionInflightFlag,
} from './broker-limit-flags.ts';
import { embeddedBrokerTlsFlags } from './broker-tls-flags.ts';
import {
  caFileFlag,
  certificatePairProblems,
  hostValue,
  logLevelFlag,
  mqttClientCertificateFlags,
  mqttReconnectMaxFlag,
  mqttUrlFlag,
  nsFlag,
  tlsFlags,
  tlsProblems,
} from './common-flags.ts';
import { flag, flagSchema, labeler, negatedFlag, repeatableFlag } from './flags.ts';
import { DEFAULT_HEAP_GROWTH_PERCENT } from './heap-growth.ts';

export const serveFlags = {
  port: flag('--port <port>', 'HTTP port (0 picks a free one)', port, { default: '8080' }),
  host: flag('--host <host>', 'HTTP listen address', hostValue, { default: '0.0.0.0' }),
  ...tlsFlags(),
  deviceId: flag('--device-id <id>', 'device id, [A-Za-z0-9_-]{1,64}', idSchema, {
    default: defaultDeviceId,
    defaultHelp: 'the host name',
  }),
  installation: flag('--installation <kind>', 'cash-register | cash-register+pos | pos', installationSchema, {
    default: 'cash-register',
  }),
  users: repeatableFlag(
    '--user <NAME:PASSWORD>',
    'a REST user, also a controller on the embedded broker; none: admin with a printed random password',
    serviceUserSpecSchema,
  ),
  auth: flag('--auth <on|off>', 'off: no tokens needed (logs a warning)', z.enum(['on', 'off']), {
    default: 'on',
  }),
  ...restAuthFlags,
  maxJsonDepth: flag(
    '--max-json-depth <n>',
    'deepest nesting of a JSON request body, refused (400) before it is parsed',
    wholeNumber(1, 1000),
    { default: '32' },
  ),
  mqttUrl: mqttUrlFlag(
    'use this broker instead of the embedded one (mqtt://USER:PASS@host:port, mqtts://, ws://); a comma-separated list fails over between instances',
  ),
  mqttCa: caFileFlag('--mqtt-ca <file>', 'PEM CA certificate(s) to trust for an mqtts:// or wss:// broker'),
  ...mqttClientCertificateFlags(),
  mqttProtocol: flag(
    '--mqtt-protocol <auto|3.1.1|5>',
    'MQTT protocol of the bridge: auto (5 where the broker accepts it, else 3.1.1), 3.1.1 or 5 (4: old name of 3.1.1)',
    z
      .union([z.string(), z.number()])
      .transform(String)
      .pipe(z.enum(['auto', '3.1.1', '4', '5'], { error: 'expected auto, 3.1.1 or 5 (4 = 3.1.1)' }))
      .transform((value): 'auto' | '3.1.1' | '5' => (value === '4' ? '3.1.1' : value)),
    { default: 'auto' },
  ),
  mqttMaxInflight: flag(
    '--mqtt-max-inflight <n>',
    "status messages awaiting the broker's acknowledgement at once; beyond, statuses are coalesced",
    wholeNumber(1, 65_000),
    { default: String(BRIDGE_DEFAULTS.maxStatusesInFlight) },
  ),
  mqttReconnectMax: mqttReconnectMaxFlag(BRIDGE_DEFAULTS.reconnectPeriodMs, BRIDGE_DEFAULTS.reconnectMaxMs),
  healthMqttGrace: flag(
    '--health-mqtt-grace <duration>',
    '/health says degraded (503) once the MQTT broker is out of reach this long (a bare number is ms)',
    durationIn('ms'),
    { default: '60s' },
  ),
  requestIdMemory: flag(
    '--request-id-memory <n>',
    'MQTT requestIds remembered for idempotency (the last N submissions)',
    wholeNumber(1, 1_000_000),
    { default: String(DEFAULT_REQUEST_ID_MEMORY) },
  ),
  brokerPort: flag(
    '--broker-port <port>',
    'embedded broker port, when no --mqtt-url (0 picks a free one)',
    port,
    { default: '1883' },
  ),
  brokerHost: flag('--broker-host <host>', 'embedded broker listen address', hostValue, {
    default: '0.0.0.0',
  }),
  brokerWsPort: flag('--broker-ws-port <port>', 'embedded broker WebSocket port', port, {
    defaultHelp: 'off',
  }),
  ...embeddedBrokerTlsFlags,
  // The embedded broker's limits (defaults in broker/limits.ts).
  brokerMaxPacketBytes: maxPacketBytesFlag('broker-max-packet-bytes'),
  brokerConnectTimeout: connectTimeoutFlag('broker-connect-timeout'),
  brokerMaxConnections: maxConnectionsFlag('broker-max-connections'),
  brokerMaxPendingPerAddress: maxPendingPerAddressFlag('broker-max-pending-per-address'),
  brokerMaxSessionInflight: maxSessionInflightFlag('broker-max-session-inflight'),
  mqtt: negatedFlag('--no-mqtt', 'no MQTT at all'),
  ns: nsFlag(),
  groups: repeatableFlag(
    '--group <group>',
    'an MQTT group this device takes scripts for (every device is in `all`)',
    idSchema,
  ),
  attributes: repeatableFlag(
    '--attribute <key=value>',
    "an attribute in this device's state, for head-office targets (at most 32; key [a-z][a-z0-9_-]{0,31}, value up to 128 characters)",
    attributeFlagSchema,
  ),
  executor: flag('--executor <name>', 'simulator | command', z.enum(['simulator', 'command']), {
    default: 'simulator',
  }),
  command: flag(
    '--command <cmd>',
    'program for --executor command: script on stdin, report on stdout',
    z.string().min(1),
  ),
  commandCgroup: flag(
    '--command-cgroup <mode>',
    "a cgroup per --command program, killed whole at the task's end: auto (when the service may create one), require (refuse to start without), off",
    z.enum(['auto', 'require', 'off']),
    { default: 'auto' },
  ),
  retain: flag('--retain <n>', 'ended tasks kept', wholeNumber(1, 1_000_000), { default: '128' }),
  maxQueue: flag(
    '--max-queue <n>',
    'queued tasks accepted before 503 QUEUE_FULL',
    wholeNumber(1, 10_000_000),
    {
      default: '1000',
    },
  ),
  scriptTimeout: flag(
    '--script-timeout <duration>',
    'longest a script may run, either executor (FAILURE after it; 0: none)',
    duration,
    { default: '120s' },
  ),
  maxScriptBytes: flag(
    '--max-script-bytes <n>',
    'largest script in UTF-8 bytes (413 SCRIPT_TOO_LARGE)',
    wholeNumber(1),
    { default: String(DEFAULT_MAX_SCRIPT_BYTES) },
  ),
  outputCap: flag('--output-cap <n>', 'largest report kept, in bytes (either executor)', wholeNumber(1), {
    default: String(EXECUTOR_DEFAULTS.outputCap),
  }),
  fmScriptTimeout: flag(
    '--fm-script-timeout <duration>',
    'default and longest wait of POST /api/fm-script before it answers 202',
    duration,
    { default: '60s' },
  ),
  heapGrowth: flag(
    '--heap-growth <percent>',
    "growth of V8's old generation past its live size before a full collection (10-300; 0: V8 chooses)",
    wholeNumber(0, 300).superRefine((percent, ctx) => {
      // Below V8's own least growth (10 %) every promotion would start a full collection.
      if (percent > 0 && percent < 10)
        ctx.addIssue({ code: 'custom', message: `expected 0 (V8 chooses) or 10-300, got ${percent}` });
    }),
    { default: String(DEFAULT_HEAP_GROWTH_PERCENT) },
  ),
  logLevel: logLevelFlag('info'),
};

export const serveConfigSchema = flagSchema(serveFlags);

/**
 * Checks across flags. They look at the raw input so that they are reported together with the
 * schema's own problems (zod skips refinements of an object that already has issues).
 */
function serveCrossChecks(input: ServeConfigInput): string[] {
  const problems: string[] = tlsProblems(input, {
    '--broker-tls-port': input.brokerTlsPort,
    '--broker-client-ca': input.brokerClientCa,
  });
  if (input.brokerClientCa !== undefined && input.brokerTlsPort === undefined)
    problems.push('--broker-client-ca: needs --broker-tls-port (device certificates come over TLS)');
  problems.push(...mqttCertificateProblems(input));
  if (input.executor === 'command' && !input.command) {
    problems.push('--command: --executor command needs --command "<program> [args]"');
  }
  if (input.mqttUrl && input.mqtt === false)
    problems.push('--mqtt-url: --mqtt-url and --no-mqtt contradict each other');
  problems.push(...attributeInputProblems(input.attributes));
  const names = new Set<string>();
  for (const spec of input.users ?? []) {
    const name = typeof spec === 'string' ? spec.split(':')[0] : undefined;
    if (name && names.has(name)) problems.push(`--user: user ${name} given twice`);
    if (name) names.add(name);
  }
  // On the embedded broker the device's own bridge logs in with the device id as its user name
  // (a `device` user's name is its id, docs/broker.md), so no --user may take that name.
  const embedded = input.mqtt !== false && !input.mqttUrl;
  if (!embedded && input.brokerTlsPort !== undefined)
    problems.push('--broker-tls-port: only with the embedded broker (not with --mqtt-url or --no-mqtt)');
  if (embedded && String(input.mqttProtocol ?? 'auto') === '5') {
    problems.push(
      '--mqtt-protocol: the embedded broker (aedes) speaks MQTT 3.1.1 only: use auto or 3.1.1, or 5 with --mqtt-url',
    );
  }
  const deviceId = typeof input.deviceId === 'string' ? input.deviceId : defaultDeviceId();
  if (embedded && names.has(deviceId)) {
    problems.push(
      `--user: user ${deviceId} has the name of this device (--device-id); the embedded broker reserves it for the device itself: choose another user name or device id`,
    );
  }
  return problems;
}

/** Count and repeated keys of `--attribute` (each pair's own shape is the schema's). */
function attributeInputProblems(raw: unknown): string[] {
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [];
  const pairs = list.flatMap((text) => {
    const parsed = attributeFlagSchema.safeParse(text);
    return parsed.success ? [parsed.data] : [];
  });
  return attributeListProblems(pairs);
}

/**
 * `--mqtt-cert`/`--mqtt-key`: together, with --mqtt-url (the embedded broker needs none), and
 * naming this device: the broker logs a certificate in as the device of its CN, so another CN
 * would have every state and status refused.
 */
function mqttCertificateProblems(input: ServeConfigInput): string[] {
  const problems = certificatePairProblems(input.mqttCert, input.mqttKey, '--mqtt-cert', '--mqtt-key');
  if (input.mqttCert === undefined) return problems;
  if (!input.mqttUrl)
    problems.push('--mqtt-cert: only with --mqtt-url (a device certificate for an mqtts:// broker)');
  const deviceId = typeof input.deviceId === 'string' ? input.deviceId : defaultDeviceId();
  const cn = certificateCn(input.mqttCert);
  if (cn !== undefined && cn !== deviceId) {
    problems.push(
      `--mqtt-cert: the certificate's CN is ${cn}, not this device's id ${deviceId} (the broker logs it in as the device ${cn}): pass --device-id ${cn} or use that device's certificate`,
    );
  }
  return problems;
}

/** The CN of a readable PEM certificate; undefined when there is none (the flag reports that). */
function certificateCn(path: unknown): string | undefined {
  if (typeof path !== 'string' || pemProblem(path, 'CERTIFICATE')) return undefined;
  try {
    const subject = new X509Certificate(readPem(path)).subject;
    return /^CN=(.*)$/m.exec(subject)?.[1];
  } catch {
    return undefined;
  }
}

export type ServeConfigInput = z.input<typeof serveConfigSchema>;
export type ServeConfig = Readonly<z.infer<typeof serveConfigSchema>>;

// The device core reads its part of this configuration through DeviceCoreConfig.
const _coreView = (config: ServeConfig): DeviceCoreConfig => config;
void _coreView;

/** For code (the demo, tests, benchmarks): an input object; the CLI goes through parseFlags. */
export function parseServeConfig(input: ServeConfigInput): ServeConfig {
  return parseConfig(serveConfigSchema, input, serveCrossChecks(input), labeler(serveFlags));
}

/** The cross-flag problems, for parseFlags. */
export function serveCrossProblems(input: Record<string, unknown>): string[] {
  return serveCrossChecks(input as ServeConfigInput);
}
