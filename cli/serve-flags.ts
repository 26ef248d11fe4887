/** `serve`'s commander flags to the config schema's input; zod (src/config.ts) does all checking. */

import { listValue } from './options.ts';
import type { ServeConfigInput } from './serve-config.ts';

export interface ServeFlags {
  port?: string;
  host?: string;
  deviceId?: string;
  installation?: string;
  user?: string[] | string;
  auth?: string;
  tokenTtl?: string;
  authMaxFailures?: string;
  authWindow?: string;
  mqtt?: boolean;
  mqttUrl?: string;
  mqttProtocol?: string;
  mqttMaxInflight?: string;
  requestIdMemory?: string;
  brokerPort?: string;
  brokerHost?: string;
  brokerWsPort?: string;
  ns?: string;
  group?: string[] | string;
  executor?: string;
  command?: string;
  retain?: string;
  maxQueue?: string;
  scriptTimeout?: string;
  maxScriptBytes?: string;
  outputCap?: string;
  fmScriptTimeout?: string;
  logLevel?: string;
}

export function serveInput(flags: ServeFlags, env: NodeJS.ProcessEnv = process.env): ServeConfigInput {
  const input: Record<string, unknown> = {
    port: flags.port,
    host: flags.host,
    deviceId: flags.deviceId,
    installation: flags.installation,
    users: listValue(flags.user),
    auth: flags.auth,
    tokenTtl: flags.tokenTtl,
    authMaxFailures: flags.authMaxFailures,
    authWindow: flags.authWindow,
    // --no-mqtt, or REGBRIDGE_MQTT=off in the environment.
    mqtt: flags.mqtt === false ? false : mqttOffInEnv(env) ? false : undefined,
    mqttUrl: flags.mqttUrl,
    mqttProtocol: flags.mqttProtocol,
    mqttMaxInflight: flags.mqttMaxInflight,
    requestIdMemory: flags.requestIdMemory,
    brokerPort: flags.brokerPort,
    brokerHost: flags.brokerHost,
    brokerWsPort: flags.brokerWsPort,
    ns: flags.ns,
    groups: listValue(flags.group),
    executor: flags.executor,
    command: flags.command,
    retain: flags.retain,
    maxQueue: flags.maxQueue,
    scriptTimeout: flags.scriptTimeout,
    maxScriptBytes: flags.maxScriptBytes,
    outputCap: flags.outputCap,
    fmScriptTimeout: flags.fmScriptTimeout,
    logLevel: flags.logLevel,
  };
  for (const key of Object.keys(input)) if (input[key] === undefined) delete input[key];
  return input as ServeConfigInput;
}

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);

/** REGBRIDGE_MQTT=off, or REGBRIDGE_NO_MQTT=1|true|yes|on (the variable of `--no-mqtt`). */
export function mqttOffInEnv(env: NodeJS.ProcessEnv): boolean {
  return (
    env.REGBRIDGE_MQTT?.toLowerCase() === 'off' || TRUE_WORDS.has(env.REGBRIDGE_NO_MQTT?.toLowerCase() ?? '')
  );
}
