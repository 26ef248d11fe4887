/**
 * `--mqtt-protocol auto` (docs/mqtt.md, "MQTT 5 or 3.1.1"): connect with MQTT 5 and fall back to
 * 3.1.1 when the broker refuses the protocol in its CONNACK or closes without one (aedes 1.x);
 * network and TLS errors change nothing. The choice is kept per broker URL for the process's life
 * and applied by editing the options mqtt.js reads at every reconnect.
 */
import { ErrorWithReasonCode, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';

export type ProtocolMode = 4 | 5 | 'auto';

/** CONNACK codes that mean "not this protocol version". */
const PROTOCOL_REFUSALS = new Set([1, 0x84]);

/** MQTT 5 ends a session at disconnect unless told otherwise ([MQTT-3.1.2-23]): keep a week. */
export const SESSION_EXPIRY_SECONDS = 7 * 24 * 3600;

export class ProtocolNegotiation {
  private readonly mode: ProtocolMode;
  private readonly logger: Logger;
  private readonly currentUrl: () => string;
  /** URLs whose broker refused MQTT 5. */
  private readonly v311Only = new Set<string>();
  private client: MqttClient | undefined;
  private gotConnack = false;
  private networkError = false;

  constructor(mode: ProtocolMode, logger: Logger, currentUrl: () => string) {
    this.mode = mode;
    this.logger = logger;
    this.currentUrl = currentUrl;
  }

  /** The version of the first CONNECT. */
  get initial(): 4 | 5 {
    return this.mode === 4 ? 4 : 5;
  }

  /** The version of the connection in use (or being tried). */
  get current(): 4 | 5 {
    return (this.client?.options.protocolVersion as 4 | 5 | undefined) ?? this.initial;
  }

  /** Call after the failover rotation attached (its 'reconnect' handler must switch the URL first). */
  attach(client: MqttClient): void {
    this.client = client;
    if (this.mode !== 'auto') return;
    client.on('reconnect', this.onReconnect);
    client.on('connect', this.onConnack);
    client.on('error', this.onError);
    client.on('close', this.onClose);
  }

  detach(): void {
    const client = this.client;
    if (!client || this.mode !== 'auto') return;
    client.off('reconnect', this.onReconnect);
    client.off('connect', this.onConnack);
    client.off('error', this.onError);
    client.off('close', this.onClose);
  }

  /** A refusal that falling back to 3.1.1 answers: not fatal for the first connection. */
  recoverable(error: Error): boolean {
    return this.mode === 'auto' && error instanceof ErrorWithReasonCode && PROTOCOL_REFUSALS.has(error.code);
  }

  private readonly onReconnect = (): void => {
    this.gotConnack = false;
    this.networkError = false;
    this.use(this.v311Only.has(this.currentUrl()) ? 4 : 5);
  };

  private readonly onConnack = (): void => {
    this.gotConnack = true;
  };

  private readonly onError = (error: Error & { code?: unknown }): void => {
    if (this.recoverable(error) && this.current === 5) {
      this.fallBack(`CONNACK code ${String(error.code)}`);
      // The refusal is an answer, not an outage: try 3.1.1 at once rather than after the backoff's
      // wait (about 1 s for every register on the store broker). The CONNACK error comes before
      // the close that arms mqtt.js' reconnect timer with this period; the backoff sets the next.
      if (this.client) this.client.options.reconnectPeriod = 1;
    } else if (typeof error.code === 'string') this.networkError = true;
  };

  private readonly onClose = (): void => {
    if (this.current !== 5 || this.gotConnack || this.networkError) return;
    this.fallBack('the broker closed the connection without answering a level-5 CONNECT');
  };

  private fallBack(why: string): void {
    const url = this.currentUrl();
    if (!this.v311Only.has(url)) {
      this.logger.info({ url, why }, 'the broker does not accept MQTT 5; using MQTT 3.1.1');
    }
    this.v311Only.add(url);
    this.use(4);
  }

  private use(version: 4 | 5): void {
    const options = this.client?.options;
    if (!options || options.protocolVersion === version) return;
    options.protocolVersion = version;
    if (version === 5) options.properties = { sessionExpiryInterval: SESSION_EXPIRY_SECONDS };
    else delete options.properties;
  }
}
