/**
 * Flag declarations several commands share (cli/flags.ts explains the mechanism): the log level,
 * the topic namespace, the broker connection of the controller commands, listen addresses.
 */
import { z } from 'zod';
import { mqttUrlSchema } from '../bridge/contract/broker-url.ts';
import { namespaceSchema } from '../bridge/contract/topics.ts';
import { flag } from './flags.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const logLevelValue = z.enum(LOG_LEVELS);

/** `--log-level`: logs go to stderr, pretty on a terminal, JSON lines otherwise (cli/logging.ts). */
export function logLevelFlag(defaultLevel: (typeof LOG_LEVELS)[number]) {
  return flag('--log-level <level>', `logs on stderr: ${LOG_LEVELS.join('|')}`, logLevelValue, {
    default: defaultLevel,
  });
}

/** `--ns`: the MQTT topic namespace (docs/mqtt.md, "Topics"). */
export function nsFlag(help = 'MQTT topic namespace, may contain /') {
  return flag('--ns <namespace>', help, namespaceSchema, { default: 'pos' });
}

export const hostValue = z.string().min(1, 'expected a host name or address');

/** `--mqtt-url` of a client of the store broker, optional. */
export function mqttUrlFlag(help: string) {
  return flag('--mqtt-url <url>', help, mqttUrlSchema());
}

/** `--mqtt-url` that must be given; `missing` is the message when it is not. */
export function requiredMqttUrlFlag(help: string, missing: string) {
  return flag('--mqtt-url <url>', help, mqttUrlSchema(missing), { required: true, defaultHelp: 'required' });
}
