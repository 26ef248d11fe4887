/**
 * Flag declarations several commands share (cli/flags.ts explains the mechanism): the log level,
 * the topic namespace, the broker connection of the controller commands, listen addresses.
 */
import { createSecureContext } from 'node:tls';
import * as z from 'zod';
import { mqttUrlSchema } from '../bridge/contract/broker-url.ts';
import { backoffScheduleProblem } from '../bridge/contract/reconnect-backoff.ts';
import { storeNamespaceSchema } from '../bridge/contract/store-namespace.ts';
import { namespaceSchema } from '../bridge/contract/topics.ts';
import { durationIn } from '../src/config.ts';
import { type PemKind, pemProblem, readPem } from '../src/tls.ts';
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

/**
 * `--ns` of a controller (the service, `fanout`, `watch`): one store's namespace, or every
 * store's with one `+` level in place of the store id (`stores/+`, docs/controller.md).
 */
export function controllerNsFlag() {
  return flag(
    '--ns <namespace>',
    "MQTT topic namespace, may contain /; one + level in place of the store id serves many stores ('stores/+')",
    storeNamespaceSchema,
    { default: 'pos' },
  );
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

/**
 * `--mqtt-reconnect-max`: the cap of an MQTT client's reconnect backoff
 * (bridge/contract/reconnect-backoff.ts); 0 keeps a fixed period.
 */
export function mqttReconnectMaxFlag(firstMs: number, defaultMs: number) {
  const first = `${firstMs / 1000}s`;
  return flag(
    '--mqtt-reconnect-max <duration>',
    `longest wait between MQTT reconnect attempts: waits start near ${first} and double, randomised, up to it (0: every ${first}, no backoff)`,
    durationIn('ms').superRefine((ms, ctx) => {
      // The schedule's own rule (below the first wait it could not grow; 0 is "no backoff"),
      // in the flag's words.
      if (backoffScheduleProblem({ firstMs, maxMs: ms }) !== undefined)
        ctx.addIssue({
          code: 'custom',
          message: `expected 0 (no backoff) or at least ${first}, got ${ms}ms`,
        });
    }),
    { default: `${defaultMs / 1000}s` },
  );
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
 * `--tls-cert FILE --tls-key FILE`, the one declaration of a server's certificate and key
 * (docs/security.md, "Deploying with TLS"); tlsProblems() checks the pair, src/tls.ts reads it.
 */
export function tlsFlags(purpose = 'serve HTTPS instead of HTTP') {
  return {
    tlsCert: flag(
      '--tls-cert <file>',
      `PEM certificate (chain) to ${purpose}; needs --tls-key`,
      pemFile('CERTIFICATE'),
      { defaultHelp: 'off' },
    ),
    tlsKey: flag('--tls-key <file>', 'PEM private key of --tls-cert', pemFile('PRIVATE KEY')),
  };
}

/**
 * Checks across the TLS flags, on the raw input so they are reported with the schema's own
 * problems: `--tls-cert` and `--tls-key` come together and match; `needing` names the flags
 * given that only make sense with them (`--tls-port`, `--client-ca`, ...).
 */
export function tlsProblems(
  input: { tlsCert?: unknown; tlsKey?: unknown },
  needing: Record<string, unknown> = {},
): string[] {
  if (input.tlsCert === undefined && input.tlsKey === undefined) {
    return Object.entries(needing)
      .filter(([, value]) => value !== undefined)
      .map(([name]) => `${name}: needs --tls-cert and --tls-key`);
  }
  return certificatePairProblems(input.tlsCert, input.tlsKey, '--tls-cert', '--tls-key');
}

/** A certificate flag and its key flag come together, and the key is the certificate's. */
export function certificatePairProblems(
  cert: unknown,
  key: unknown,
  certFlag: string,
  keyFlag: string,
): string[] {
  if (cert === undefined && key === undefined) return [];
  if (cert === undefined) return [`${keyFlag}: needs ${certFlag} too`];
  if (key === undefined) return [`${certFlag}: needs ${keyFlag} too`];
  if (typeof cert !== 'string' || typeof key !== 'string') return [];
  // Unreadable files are reported by the flags themselves.
  if (pemProblem(cert, 'CERTIFICATE') || pemProblem(key, 'PRIVATE KEY')) return [];
  try {
    createSecureContext({ cert: readPem(cert), key: readPem(key) });
  } catch (error) {
    return [`${keyFlag}: cannot be used with ${certFlag}: ${(error as Error).message}`];
  }
  return [];
}

/**
 * `--mqtt-cert FILE --mqtt-key FILE`: the device's own certificate for a store broker that takes
 * device certificates (`--client-ca`; the broker logs the device in by the certificate's CN).
 */
export function mqttClientCertificateFlags() {
  return {
    mqttCert: flag(
      '--mqtt-cert <file>',
      'PEM client certificate for an mqtts:// broker with device certificates (its CN is this device); needs --mqtt-key',
      pemFile('CERTIFICATE'),
      { defaultHelp: 'off' },
    ),
    mqttKey: flag('--mqtt-key <file>', 'PEM private key of --mqtt-cert', pemFile('PRIVATE KEY')),
  };
}

type PemFileFlag = '--ca <file>' | '--mqtt-ca <file>' | '--client-ca <file>' | '--broker-client-ca <file>';

/** A PEM file of one or more certificates: a private CA a client trusts, or that signs device certificates. */
export function certificateFileFlag(flags: PemFileFlag, help: string) {
  return flag(flags, help, pemFile('CERTIFICATE'));
}

/** A private CA (PEM, one or more certificates) a client trusts besides the system's. */
export function caFileFlag(flags: '--ca <file>' | '--mqtt-ca <file>', help: string) {
  return certificateFileFlag(flags, `${help} (besides the system's)`);
}
