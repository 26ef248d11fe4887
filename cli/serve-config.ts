/**
 * The one configuration schema of `regbridge serve` (docs/api.md, "Command line"): every flag
 * and REGBRIDGE_<FLAG> variable, validated once with every problem reported at once, then frozen.
 */
import { z } from 'zod';
import { mqttUrlSchema } from '../bridge/contract/broker-url.ts';
import { idSchema, installationSchema, namespaceSchema } from '../bridge/contract/topics.ts';
import {
  type DeviceCoreConfig,
  defaultDeviceId,
  duration,
  parseConfig,
  port,
  positiveInt,
  userSpecSchema,
} from '../src/config.ts';

export const serveConfigSchema = z.object({
  port: port.default(8080),
  host: z.string().min(1).default('0.0.0.0'),
  deviceId: idSchema.default(defaultDeviceId),
  installation: installationSchema.default('cash-register'),
  users: z.array(userSpecSchema).default([]),
  auth: z.enum(['on', 'off']).default('on'),
  /** Seconds. */
  tokenTtl: positiveInt.default(3600),
  /** Failed authentications from one address before 429, within `authWindow`. */
  authMaxFailures: positiveInt.default(5),
  authWindow: duration.default(60_000),
  mqtt: z.boolean().default(true),
  mqttUrl: mqttUrlSchema().optional(),
  /** MQTT protocol of the device's bridge: 4 (3.1.1, every broker) or 5 (response topic, correlation data). */
  mqttProtocol: z.coerce
    .number()
    .pipe(z.union([z.literal(4), z.literal(5)]))
    .default(4),
  /** Status messages awaiting the broker's acknowledgement at once; beyond, statuses are coalesced. */
  mqttMaxInflight: positiveInt.max(65_000).default(1000),
  /** requestIds remembered for MQTT idempotency (contract section 3: the last 1000 submissions). */
  requestIdMemory: positiveInt.max(1_000_000).default(1000),
  brokerPort: port.default(1883),
  brokerHost: z.string().min(1).default('0.0.0.0'),
  brokerWsPort: port.optional(),
  ns: namespaceSchema.default('pos'),
  groups: z.array(idSchema).default([]),
  executor: z.enum(['simulator', 'command']).default('simulator'),
  command: z.string().min(1).optional(),
  retain: positiveInt.max(1_000_000).default(128),
  maxQueue: positiveInt.max(10_000_000).default(1000),
  /** Milliseconds; `--script-timeout 120s`. */
  scriptTimeout: duration.default(120_000),
  /** Bytes of UTF-8 script (and request body) accepted; 413 SCRIPT_TOO_LARGE above. */
  maxScriptBytes: positiveInt.default(1024 * 1024),
  /** Bytes of stdout the command executor keeps as report. */
  outputCap: positiveInt.default(1024 * 1024),
  /** Default and maximum wait of POST /api/fm-script, milliseconds. */
  fmScriptTimeout: duration.default(60_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/**
 * Checks across flags. They look at the raw input so that they are reported together with the
 * schema's own problems (zod skips refinements of an object that already has issues).
 */
function serveCrossChecks(input: ServeConfigInput): string[] {
  const problems: string[] = [];
  if (input.executor === 'command' && !input.command) {
    problems.push('--command: --executor command needs --command "<program> [args]"');
  }
  if (input.mqttUrl && input.mqtt === false)
    problems.push('--mqtt-url: --mqtt-url and --no-mqtt contradict each other');
  const names = new Set<string>();
  for (const spec of input.users ?? []) {
    const name = typeof spec === 'string' ? spec.split(':')[0] : undefined;
    if (name && names.has(name)) problems.push(`--user: user ${name} given twice`);
    if (name) names.add(name);
  }
  // On the embedded broker the device's own bridge logs in with the device id as its user name
  // (a `device` user's name is its id, contract section 4), so no --user may take that name.
  const embedded = input.mqtt !== false && !input.mqttUrl;
  if (embedded && String(input.mqttProtocol ?? '4') === '5') {
    problems.push(
      '--mqtt-protocol: the embedded broker (aedes) speaks MQTT 3.1.1 only: use 4, or 5 with --mqtt-url',
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

export type ServeConfigInput = z.input<typeof serveConfigSchema>;
export type ServeConfig = Readonly<z.infer<typeof serveConfigSchema>>;

// The device core reads its part of this configuration through DeviceCoreConfig.
const _coreView = (config: ServeConfig): DeviceCoreConfig => config;
void _coreView;

export function parseServeConfig(input: ServeConfigInput): ServeConfig {
  return parseConfig(serveConfigSchema, input, serveCrossChecks(input));
}
