/**
 * What `regbridge store-config` writes for one store (docs/topology.md, "Add a store"): the store
 * broker's mosquitto.conf with the bridge that dials out to the head office's hub, and the
 * command line and environment of every register. Pure: the command (store-config-command.ts)
 * prints or writes it, the tests run it in a real mosquitto.
 */
import { topics } from '../bridge/contract/topics.ts';

export interface StoreConfigInput {
  store: string;
  nsPrefix: string;
  /** The hub's nodes as `host:port`, in failover order. */
  hub: readonly string[];
  hubUsername?: string | undefined;
  hubPassword?: string | undefined;
  hubCafile?: string | undefined;
  hubCertfile?: string | undefined;
  hubKeyfile?: string | undefined;
  /** The store broker's listener, `host:port`. */
  listen: string;
  /** How registers reach the store broker (host name or address). */
  storeHost: string;
  registers: readonly string[];
  passwordFile?: string | undefined;
  persistenceDir?: string | undefined;
  wanQueue: number;
  clientId?: string | undefined;
}

export interface StoreRegister {
  id: string;
  /** `regbridge serve ...` as one shell line. */
  command: string;
  /** The same as REGBRIDGE_* variables (a systemd EnvironmentFile, a compose env_file). */
  env: Record<string, string>;
}

export interface StoreConfig {
  ns: string;
  mosquittoConf: string;
  registers: StoreRegister[];
  /** A shell script starting every register (registers.sh). */
  registersScript: string;
}

/** The store's namespace: `<prefix>/<store id>` (docs/topology.md, "Add a store: one command"). */
export function storeNamespace(input: Pick<StoreConfigInput, 'nsPrefix' | 'store'>): string {
  return `${input.nsPrefix}/${input.store}`;
}

/** `host:port` split at its last colon (an IPv6 address comes in brackets). */
export function splitHostPort(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  return { host: value.slice(0, at), port: Number(value.slice(at + 1)) };
}

/** Quoted for a POSIX shell only when needed. */
function sh(value: string): string {
  return /^[A-Za-z0-9_./:@,+=-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** One `connection` block of the store's bridge to the hub. */
export interface BridgeConnection {
  name: string;
  clientId: string;
  /** Whether the hub gets the retain flag of what this connection sends up. */
  retain: boolean;
  /** store -> hub, each with the QoS the bridge forwards it at. */
  out: { filter: string; qos: 0 | 1 }[];
  /** hub -> store, QoS 1. */
  in: string[];
}

/**
 * The bridge's two connections, with exactly what crosses the WAN (docs/topology.md, "What
 * crosses the WAN"). No `both`, which would loop every message back through a hub that cannot
 * mark bridged messages (try_private false). Task statuses and replies go up on a connection
 * of their own without their retain flag (docs/decisions/hub-statuses-not-retained.md): each
 * retained message costs the hub a replicated store and a delete; the controller re-asks
 * instead. Register states stay retained: the head office's directory is read from them.
 */
export function bridgeConnections(ns: string, clientId: string): BridgeConnection[] {
  return [
    {
      name: 'hub',
      clientId,
      retain: true,
      out: [{ filter: topics.allStates(ns), qos: 1 }],
      // `+/+/scripts` is exactly the device and group script topics (no other topic of the
      // namespace has three levels ending so), `+/+/cancel` the cancels: two subscriptions at
      // the hub, each a durable JetStream consumer there, instead of four.
      in: [`${ns}/+/+/scripts`, `${ns}/+/+/cancel`],
    },
    {
      name: 'hub-results',
      clientId: `${clientId}-results`,
      retain: false,
      // Replies at QoS 0: the statuses carry every result (with its requestId), so a reply lost
      // (a hub node gone, the link down) costs nothing but an early taskId, and the hub stores
      // nothing for it; a refusal lost is asked again before the deadline.
      out: [
        { filter: topics.allTaskStatuses(ns), qos: 1 },
        { filter: topics.allReplies(ns), qos: 0 },
      ],
      in: [],
    },
  ];
}

/** One bridge `connection` block: the store dials out, a persistent session queued on both sides. */
function connectionBlock(input: StoreConfigInput, c: BridgeConnection): string[] {
  const tls = input.hubCafile !== undefined;
  return [
    `connection ${c.name}`,
    `address ${input.hub.join(' ')}`,
    '# A node lost: the next address; no switching back while the current one works.',
    'round_robin true',
    `remote_clientid ${c.clientId}`,
    ...(input.hubUsername !== undefined ? [`remote_username ${input.hubUsername}`] : []),
    ...(input.hubPassword !== undefined ? [`remote_password ${input.hubPassword}`] : []),
    'bridge_protocol_version mqttv311',
    "# nats-server refuses mosquitto's bridge flag (CONNACK 1, unacceptable protocol version).",
    'try_private false',
    '# The default notifications are $SYS-like topics outside the store namespace.',
    'notifications false',
    '# Queued while the link is down: QoS 1 on both sides, sessions kept (local_cleansession follows).',
    'cleansession false',
    'restart_timeout 2 30',
    'keepalive_interval 30',
    ...(c.retain
      ? []
      : [
          '# The hub keeps no copy: the head office re-asks a register for a result it missed.',
          'bridge_outgoing_retain false',
        ]),
    ...(tls
      ? [
          `bridge_cafile ${input.hubCafile}`,
          ...(input.hubCertfile !== undefined ? [`bridge_certfile ${input.hubCertfile}`] : []),
          ...(input.hubKeyfile !== undefined ? [`bridge_keyfile ${input.hubKeyfile}`] : []),
          'bridge_insecure false',
          'bridge_tls_version tlsv1.2',
        ]
      : []),
    ...c.out.map((t) => `topic ${t.filter} out ${t.qos}`),
    ...c.in.map((t) => `topic ${t} in 1`),
  ];
}

function mosquittoConf(input: StoreConfigInput, ns: string): string {
  const listen = splitHostPort(input.listen);
  const connections = bridgeConnections(ns, input.clientId ?? `store-${input.store}`);
  const lines = [
    `# Store ${input.store} (namespace ${ns}): its store broker and the bridge to the head office.`,
    '# Generated by `regbridge store-config`; change the flags and generate again rather than editing.',
    '',
    '# The store broker: the registers and the store controller connect here, on the LAN.',
    `listener ${listen.port} ${listen.host}`,
    ...(input.passwordFile !== undefined
      ? ['allow_anonymous false', `password_file ${input.passwordFile}`]
      : [
          '# No password file given: any client on this listener is let in (LAN only).',
          'allow_anonymous true',
        ]),
    ...(input.persistenceDir !== undefined
      ? [
          '# What waits for the hub survives a restart of this broker.',
          'persistence true',
          `persistence_location ${input.persistenceDir.endsWith('/') ? input.persistenceDir : `${input.persistenceDir}/`}`,
          'autosave_interval 60',
        ]
      : [
          '# In memory: what waits for the hub is lost if this broker restarts (--persistence-dir).',
          'persistence false',
        ]),
    'set_tcp_nodelay true',
    '# Per client, the bridge included: what is queued while the WAN link is down (excess dropped).',
    'max_inflight_messages 1000',
    `max_queued_messages ${input.wanQueue}`,
    ...connections.flatMap((c) => ['', ...connectionBlock(input, c)]),
    '',
  ];
  return lines.join('\n');
}

function register(input: StoreConfigInput, ns: string, id: string): StoreRegister {
  const { port } = splitHostPort(input.listen);
  // With a password file the register logs in as itself; its password goes into the URL
  // (REGBRIDGE_MQTT_URL in its environment file), never into this generated file.
  const user = input.passwordFile !== undefined ? `${id}@` : '';
  const url = `mqtt://${user}${input.storeHost}:${port}`;
  const env = {
    REGBRIDGE_NS: ns,
    REGBRIDGE_DEVICE_ID: id,
    REGBRIDGE_MQTT_URL: url,
    REGBRIDGE_MQTT_PROTOCOL: '3.1.1',
  };
  const command = [
    'regbridge serve',
    `--ns ${sh(ns)}`,
    `--device-id ${sh(id)}`,
    `--mqtt-url ${sh(url)}`,
    '--mqtt-protocol 3.1.1',
  ].join(' ');
  return { id, command, env };
}

export function storeConfig(input: StoreConfigInput): StoreConfig {
  const ns = storeNamespace(input);
  const registers = input.registers.map((id) => register(input, ns, id));
  const registersScript = [
    '#!/bin/sh',
    `# Store ${input.store}: every register of this machine (one line each; run each under your`,
    '# service manager in production, with its <id>.env as environment).',
    ...registers.map((r) => `${r.command} &`),
    'wait',
    '',
  ].join('\n');
  return { ns, mosquittoConf: mosquittoConf(input, ns), registers, registersScript };
}
