/**
 * Flag declarations several commands share (cli/flags.ts explains the mechanism): the log level,
 * the topic namespace, the broker connection of the controller commands, listen addresses.
 */
import { z } from 'zod';
import { mqttUrlSchema } from '../bridge/contract/broker-url.ts';
import { namespaceSchema } from '../bridge/contract/topics.ts';
import { type PemKind, pemProblem } from '../src/tls.ts';
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

/** A readable PEM file holding a `kind` block; the configuration keeps its path. */
function pemFile(kind: PemKind) {
  return z
    .string()
    .min(1)
    .superRefine((path, ctx) => {
      const problem = pemProblem(path, kind);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
}

/**
 * `--tls-cert FILE --tls-key FILE`: HTTPS instead of HTTP on `--port` (serve; the controller
 * service takes the same pair). Check the pair with tlsPairProblems().
 */
export function tlsFlags() {
  return {
    tlsCert: flag(
      '--tls-cert <file>',
      'PEM certificate (chain) to serve HTTPS instead of HTTP; needs --tls-key',
      pemFile('CERTIFICATE'),
      { defaultHelp: 'off' },
    ),
    tlsKey: flag('--tls-key <file>', 'PEM private key of --tls-cert', pemFile('PRIVATE KEY')),
  };
}

/** `--tls-cert` and `--tls-key` come together. */
export function tlsPairProblems(input: { tlsCert?: unknown; tlsKey?: unknown }): string[] {
  if ((input.tlsCert === undefined) === (input.tlsKey === undefined)) return [];
  return input.tlsCert === undefined
    ? ['--tls-key: needs --tls-cert too']
    : ['--tls-cert: needs --tls-key too'];
}

/** A private CA (PEM, one or more certificates) a client trusts besides the system's. */
export function caFileFlag(flags: '--ca <file>' | '--mqtt-ca <file>', help: string) {
  return flag(flags, `${help} (besides the system's)`, pemFile('CERTIFICATE'));
}
