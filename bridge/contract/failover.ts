/**
 * Failover between several brokers (`--mqtt-url mqtt://a:1883,mqtt://b:1883`, docs/mqtt.md):
 * round robin, each broker with its own protocol, path and credentials. mqtt.js' own `servers`
 * keeps the first hostname, TLS servername and credentials, so here the options are repointed on
 * 'reconnect', which mqtt.js emits right before it builds the next socket.
 */
import type { IClientOptions, MqttClient, MqttProtocol } from 'mqtt';
import type { BrokerEndpoint } from './broker-url.ts';

const DEFAULT_PORTS: Record<string, number> = {
  mqtt: 1883,
  tcp: 1883,
  mqtts: 8883,
  ssl: 8883,
  ws: 80,
  wss: 443,
};

/** Where mqtt.js connects for one endpoint: protocol, host, port, path (WebSocket) and credentials. */
export function endpointOptions(endpoint: BrokerEndpoint): IClientOptions {
  const url = new URL(endpoint.url);
  const protocol = url.protocol.slice(0, -1) as MqttProtocol;
  // URL keeps the brackets of an IPv6 literal; sockets want the bare address.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const options: IClientOptions = {
    protocol,
    host,
    hostname: host,
    port: url.port ? Number(url.port) : (DEFAULT_PORTS[protocol] ?? 1883),
    username: endpoint.username,
    password: endpoint.password,
  };
  if (protocol === 'ws' || protocol === 'wss') options.path = `${url.pathname || '/'}${url.search}`;
  return options;
}

/** The endpoint-specific keys, removed before another endpoint's are set (a stale `path` would make a TCP socket dial a Unix socket). */
const ENDPOINT_KEYS = [
  'protocol',
  'host',
  'hostname',
  'port',
  'path',
  'servername',
  'username',
  'password',
] as const;

/** Points `options` (a live mqtt.js `client.options`, or the object handed to connect()) at `endpoint`. */
export function applyEndpoint(options: IClientOptions, endpoint: BrokerEndpoint): void {
  const record = options as Record<string, unknown>;
  for (const key of ENDPOINT_KEYS) delete record[key];
  for (const [key, value] of Object.entries(endpointOptions(endpoint))) {
    if (value !== undefined) record[key] = value;
  }
}

/**
 * The list of brokers and the one in use. With one endpoint it does nothing at reconnects, so a
 * single URL behaves exactly as before.
 */
export class BrokerRotation {
  readonly endpoints: readonly BrokerEndpoint[];
  #index = 0;
  #client: MqttClient | undefined;
  readonly #onReconnect = (): void => this.#advance();

  constructor(endpoints: readonly BrokerEndpoint[], startAt = 0) {
    if (endpoints.length === 0) throw new Error('BrokerRotation needs at least one endpoint');
    this.endpoints = endpoints;
    this.#index = startAt % endpoints.length;
  }

  /** The broker of the current (or next) connection attempt. */
  get current(): BrokerEndpoint {
    return this.endpoints[this.#index] as BrokerEndpoint;
  }

  /** Every URL of the list, without credentials. */
  get urls(): string[] {
    return this.endpoints.map((e) => e.url);
  }

  /** mqtt.js options for the current endpoint merged over `base` (a fresh object). */
  options(base: IClientOptions): IClientOptions {
    const options = { ...base };
    applyEndpoint(options, this.current);
    return options;
  }

  /** From now on every reconnect attempt of `client` goes to the next broker of the list. */
  attach(client: MqttClient): void {
    this.detach();
    this.#client = client;
    if (this.endpoints.length > 1) client.on('reconnect', this.#onReconnect);
  }

  detach(): void {
    this.#client?.off('reconnect', this.#onReconnect);
    this.#client = undefined;
  }

  #advance(): void {
    const client = this.#client;
    if (!client) return;
    this.#index = (this.#index + 1) % this.endpoints.length;
    applyEndpoint(client.options, this.current);
  }
}
