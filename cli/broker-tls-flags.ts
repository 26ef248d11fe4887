/**
 * `regbridge broker`'s TLS flags (docs/broker.md, "TLS"): `--tls-cert FILE --tls-key FILE` serve
 * MQTT over TLS on `--tls-port` (8883 when a certificate is given), `--client-ca FILE` accepts
 * device certificates. Files are read once while the configuration is validated; a problem
 * names the flag and the file, never the file's content.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { z } from 'zod';
import { port } from '../src/config.ts';
import { flag } from './flags.ts';

export const DEFAULT_TLS_PORT = 8883;

function pemFile(kind: 'certificate' | 'private key') {
  const marker =
    kind === 'certificate' ? /-----BEGIN CERTIFICATE-----/ : /-----BEGIN [A-Z ]*PRIVATE KEY-----/;
  // A string, not a Buffer: the configuration is deep-frozen, and PEM is ASCII.
  return z.string().transform((path, ctx): string => {
    let content: string;
    try {
      content = readFileSync(path, 'latin1');
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`,
      });
      return z.NEVER;
    }
    if (!marker.test(content)) {
      ctx.addIssue({ code: 'custom', message: `${path} holds no PEM ${kind}` });
      return z.NEVER;
    }
    return content;
  });
}

export const brokerTlsFlags = {
  tlsCert: flag(
    '--tls-cert <file>',
    'server certificate (PEM) for MQTT over TLS on --tls-port',
    pemFile('certificate'),
  ),
  tlsKey: flag('--tls-key <file>', 'private key (PEM) of --tls-cert', pemFile('private key')),
  tlsPort: flag(
    '--tls-port <port>',
    `MQTT over TLS port; ${DEFAULT_TLS_PORT} when --tls-cert is given, off otherwise (0 picks a free one)`,
    port,
    { defaultHelp: 'off' },
  ),
  clientCa: flag(
    '--client-ca <file>',
    'CA (PEM) of device certificates: a client certificate it signed logs in as the device named by its CN',
    pemFile('certificate'),
  ),
};

interface TlsInput {
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  tlsPort?: number | undefined;
  clientCa?: string | undefined;
}

/** Problems across the TLS flags, as `[flag, message]`. */
export function tlsProblems(config: TlsInput): [string, string][] {
  const problems: [string, string][] = [];
  if (config.tlsCert && !config.tlsKey) problems.push(['tlsKey', 'required with --tls-cert']);
  if (config.tlsKey && !config.tlsCert) problems.push(['tlsCert', 'required with --tls-key']);
  if (!config.tlsCert && !config.tlsKey) {
    if (config.tlsPort !== undefined) problems.push(['tlsPort', 'needs --tls-cert and --tls-key']);
    if (config.clientCa)
      problems.push(['clientCa', 'needs --tls-cert and --tls-key (device certificates come over TLS)']);
  }
  if (config.tlsCert && config.tlsKey) {
    try {
      createSecureContext({
        cert: config.tlsCert,
        key: config.tlsKey,
        ...(config.clientCa && { ca: config.clientCa }),
      });
    } catch (error) {
      problems.push(['tlsKey', `cannot use --tls-cert with --tls-key: ${(error as Error).message}`]);
    }
  }
  return problems;
}

/** The StoreBroker `tls` option, or undefined without a certificate. */
export function brokerTlsOption(config: TlsInput) {
  if (!config.tlsCert || !config.tlsKey) return undefined;
  return {
    port: config.tlsPort ?? DEFAULT_TLS_PORT,
    cert: config.tlsCert,
    key: config.tlsKey,
    ...(config.clientCa && { clientCa: config.clientCa }),
  };
}
