/**
 * The store broker's TLS flags (docs/broker.md, "TLS"), for `regbridge broker` (`--tls-port`,
 * `--client-ca`) and `serve`'s embedded broker (`--broker-tls-port`, `--broker-client-ca`). The
 * certificate and key are the shared `--tls-cert`/`--tls-key` (cli/common-flags.ts); here is what
 * only a broker has, and the StoreBroker `tls` option made from the paths.
 */
import { port } from '../src/config.ts';
import { readPem } from '../src/tls.ts';
import { certificateFileFlag, tlsFlags, tlsProblems } from './common-flags.ts';
import { flag } from './flags.ts';

export const DEFAULT_TLS_PORT = 8883;

const CLIENT_CA_HELP =
  'CA (PEM) of device certificates: a client certificate it signed logs in as the device named by its CN';

/** `regbridge broker`: MQTT over TLS on --tls-port, 8883 once a certificate is given. */
export const brokerTlsFlags = {
  ...tlsFlags('serve MQTT over TLS on --tls-port'),
  tlsPort: flag(
    '--tls-port <port>',
    `MQTT over TLS port; ${DEFAULT_TLS_PORT} when --tls-cert is given, off otherwise (0 picks a free one)`,
    port,
    { defaultHelp: 'off' },
  ),
  clientCa: certificateFileFlag('--client-ca <file>', CLIENT_CA_HELP),
};

/** `serve`: the embedded broker's TLS listener, off unless --broker-tls-port is given. */
export const embeddedBrokerTlsFlags = {
  brokerTlsPort: flag(
    '--broker-tls-port <port>',
    'MQTT over TLS port of the embedded broker, with the --tls-cert/--tls-key of HTTPS (0 picks a free one)',
    port,
    { defaultHelp: 'off' },
  ),
  brokerClientCa: certificateFileFlag(
    '--broker-client-ca <file>',
    `${CLIENT_CA_HELP}; needs --broker-tls-port`,
  ),
};

/** `regbridge broker`'s TLS problems (raw input). */
export function brokerTlsProblems(input: Record<string, unknown>): string[] {
  return tlsProblems(input, {
    '--tls-port': input.tlsPort,
    '--client-ca': input.clientCa,
  });
}

/** The StoreBroker `tls` option (files read now), or undefined without a certificate. */
export function brokerTlsOption(config: {
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  port?: number | undefined;
  clientCa?: string | undefined;
  portFlag?: string;
}) {
  if (!config.tlsCert || !config.tlsKey) return undefined;
  return {
    port: config.port ?? DEFAULT_TLS_PORT,
    cert: readPem(config.tlsCert),
    key: readPem(config.tlsKey),
    ...(config.clientCa && { clientCa: readPem(config.clientCa) }),
    ...(config.portFlag && { portFlag: config.portFlag }),
  };
}
