/**
 * The aedes hooks of the store broker: who may connect (CONNACK codes per [MQTT-3.2.2-3]), what
 * each role may publish and subscribe (access-rules.ts), and the counters. Credentials never
 * reach a log: only configured user names, client ids and topics do (an unknown user name of a
 * refused login is logged as a digest: it may be a password in the wrong field).
 */

import type {
  AedesOptions,
  AedesPublishPacket,
  AuthenticateError,
  Client,
  ConnectPacket,
  PublishPacket,
  Subscription,
} from 'aedes';
import { parseTopic } from '../bridge/contract/topics.ts';
import type { LoginThrottle } from '../src/auth/login-throttle.ts';
import type { Logger } from '../src/logger.ts';
import type { AccessRules } from './access-rules.ts';
import {
  IDENTIFIER_REJECTED,
  type Identity,
  identify,
  LoginNameLog,
  NOT_AUTHORIZED,
  refusal,
  SERVER_UNAVAILABLE,
} from './credentials.ts';
import { DeviceBounds } from './device-bounds.ts';
import { DEFAULT_BROKER_LIMITS } from './limits.ts';
import type { UserDirectory } from './users.ts';

export interface BrokerStats {
  /** Clients connected to this instance now. */
  clients: number;
  /** PUBLISH packets from clients that were authorized. */
  messagesIn: number;
  publishDenied: number;
  subscribeDenied: number;
  /** CONNECTs refused: bad credentials, anonymous, client id or will not allowed. */
  connectRefused: number;
  /** Open connections, logged in or not. */
  connections: number;
  /** Connections closed at once (`maxPendingPerAddress`) and logins refused (`maxConnections`). */
  connectionsRefused: number;
  /** QoS 1/2 publishes held for a full persistent session (`maxSessionInflight`). */
  publishesHeld: number;
}

/**
 * Where a denied PUBLISH goes: aedes can refuse only by closing, which makes mqtt.js resend for
 * ever, so it is acknowledged and dropped ([MQTT-3.3.5-2]) by diverting it, emptied, to `$SYS`,
 * which no client may subscribe to ([MQTT-4.7.2-1]).
 */
export const DENIED_PUBLISH_TOPIC = '$SYS/regbridge/publish-denied';

const WILL_TRACKING_MS = 60_000;

type Will = NonNullable<ConnectPacket['will']>;

export class Gatekeeper {
  readonly #users: () => UserDirectory;
  readonly #rules: AccessRules;
  readonly #allowAnonymous: boolean;
  readonly #logger: Logger;
  readonly #logins: LoginThrottle;
  readonly #bounds: DeviceBounds;
  readonly #names: LoginNameLog;
  readonly #identities = new WeakMap<Client, Identity>();
  readonly #wills = new WeakMap<Client, Will>();
  /** Clients whose CONNECT carried a zero-length client id (aedes has made one up by now). */
  readonly #emptyIds = new WeakSet<Client>();
  /**
   * Client id of a persistent session -> the user who made it (a session belongs to its user); dropped
   * when the owner starts clean.
   */
  readonly #sessionOwners = new Map<string, string>();
  /** Connected client id -> the client and who owns it, to stop one user taking over another's id. */
  readonly #owners = new Map<string, { client: Client; owner: string }>();
  /** Clients whose will is being published, and since when: stop() waits for them. */
  readonly #willsInFlight = new Map<Client, number>();
  #willsSettled: (() => void) | undefined;
  readonly stats: Omit<BrokerStats, 'clients' | 'connections' | 'connectionsRefused' | 'publishesHeld'> = {
    messagesIn: 0,
    publishDenied: 0,
    subscribeDenied: 0,
    connectRefused: 0,
  };

  constructor(
    users: () => UserDirectory,
    rules: AccessRules,
    allowAnonymous: boolean,
    logger: Logger,
    logins: LoginThrottle,
    maxRetainedStatuses = DEFAULT_BROKER_LIMITS.maxRetainedStatuses,
    maxReportBytes = DEFAULT_BROKER_LIMITS.maxReportBytes,
  ) {
    this.#logins = logins;
    this.#bounds = new DeviceBounds(maxRetainedStatuses, maxReportBytes);
    this.#users = users;
    this.#rules = rules;
    this.#allowAnonymous = allowAnonymous;
    this.#logger = logger;
    this.#names = new LoginNameLog(users);
  }

  identity(client: Client): Identity | undefined {
    return this.#identities.get(client);
  }

  /** Whether the client's role lets it subscribe to `filter` (the same answer as at SUBSCRIBE). */
  mayHold(client: Client, filter: string): boolean {
    const identity = this.#identities.get(client);
    return identity !== undefined && this.#rules.canSubscribe(identity.role, identity.name, filter);
  }

  /** The hooks to pass to `Aedes.createBroker`. */
  hooks(): Required<
    Pick<
      AedesOptions,
      'preConnect' | 'authenticate' | 'authorizePublish' | 'authorizeSubscribe' | 'published'
    >
  > {
    return {
      preConnect: (client, packet, callback) => {
        if (packet.will) this.#wills.set(client, packet.will);
        if (!packet.clientId) this.#emptyIds.add(client);
        callback(null, true);
      },
      authenticate: (client, username, password, callback) => {
        this.#authenticate(client, username, password).then(
          (result) => this.#authenticated(client, username, result, callback),
          (error: unknown) => {
            this.#logger.error({ clientId: client.id, err: String(error) }, 'authentication failed');
            callback(refusal(SERVER_UNAVAILABLE, 'authentication failed'), false);
          },
        );
      },
      authorizePublish: (client, packet, callback) => callback(this.#authorizePublish(client, packet)),
      authorizeSubscribe: (client, subscription, callback) =>
        callback(null, this.#authorizeSubscribe(client, subscription)),
      published: (packet, client, callback) => {
        this.#published(packet, client);
        callback(null);
      },
    };
  }

  #authenticated(
    client: Client,
    username: string | undefined,
    result: Identity | AuthenticateError,
    callback: (error: AuthenticateError | null, success: boolean | null) => void,
  ): void {
    if (result instanceof Error) {
      this.stats.connectRefused++;
      this.#logger.warn(
        {
          clientId: client.id,
          ...this.#names.fields(username),
          returnCode: result.returnCode,
          reason: result.message,
        },
        'connection refused',
      );
      callback(result, false);
      return;
    }
    this.#identities.set(client, result);
    callback(null, true);
  }

  onClientReady(client: Client): void {
    const identity = this.#identities.get(client);
    if (!identity) return;
    this.#owners.set(client.id, { client, owner: ownerKey(identity) });
    if (client.clean) this.#sessionOwners.delete(client.id);
    else this.#sessionOwners.set(client.id, ownerKey(identity));
    this.#logger.debug({ clientId: client.id, user: identity.name, role: identity.role }, 'client connected');
  }

  onClientDisconnect(client: Client): void {
    if (this.#owners.get(client.id)?.client === client) this.#owners.delete(client.id);
    this.#logger.debug({ clientId: client.id }, 'client disconnected');
  }

  /** Resolves once every will being published has gone through (or after `timeoutMs`). */
  async willsSettled(timeoutMs: number): Promise<void> {
    if (this.#willsInFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#willsSettled = resolve;
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
    this.#willsSettled = undefined;
  }

  async #authenticate(
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
  ): Promise<Identity | AuthenticateError> {
    // [MQTT-3.1.3-8]: a zero-length client id with CleanSession 0 is answered 0x02, then closed.
    // Accepting it would leave a session nobody can resume, one per connection.
    if (this.#emptyIds.has(client) && !client.clean) {
      return refusal(IDENTIFIER_REJECTED, 'a zero-length client id requires CleanSession 1');
    }
    const identity = await identify(client, username, password, {
      users: this.#users(),
      allowAnonymous: this.#allowAnonymous,
      logins: this.#logins,
    });
    if (identity instanceof Error) return identity;
    // Contract 6.1: a register's client id is its device user's alone, and that user's only one.
    const idProblem = this.#rules.clientIdProblem(identity.role, identity.name, client.id);
    if (idProblem !== undefined) return refusal(NOT_AUTHORIZED, idProblem);
    // A persistent session, and the QoS 1 scripts queued in it, belongs to the user who made it:
    // anybody else is refused, whether they ask to resume it or to discard it (CleanSession 1).
    const sessionOwner = this.#sessionOwners.get(client.id);
    if (sessionOwner !== undefined && sessionOwner !== ownerKey(identity)) {
      return refusal(NOT_AUTHORIZED, "client id of another user's persistent session");
    }
    // [MQTT-3.1.4-2] lets a new connection take over a connected client id; only its owner may.
    const current = this.#owners.get(client.id);
    if (current && current.owner !== ownerKey(identity) && !current.client.closed) {
      return refusal(IDENTIFIER_REJECTED, 'client id in use by another user');
    }
    const will = this.#wills.get(client);
    if (will) {
      const decision = this.#rules.canWill(identity.role, identity.name, {
        topic: will.topic,
        retain: will.retain ?? false,
        payloadLength: will.payload?.length ?? 0,
      });
      if (!decision.allowed) return refusal(NOT_AUTHORIZED, `last will refused: ${decision.reason}`);
    }
    return identity;
  }

  #authorizePublish(client: Client | null, packet: PublishPacket): null {
    // aedes passes no client only for the will of a client of a dead cluster instance; that will
    // was checked when the client connected.
    if (client === null) return null;
    const identity = this.#identities.get(client);
    let decision = identity
      ? this.#rules.canPublish(identity.role, identity.name, {
          topic: packet.topic,
          retain: packet.retain,
          payloadLength: packet.payload?.length ?? 0,
        })
      : ({ allowed: false, reason: 'not authenticated' } as const);
    if (decision.allowed && identity) {
      const bound = this.#boundProblem(identity, packet);
      if (bound !== undefined) decision = { allowed: false, reason: bound };
    }
    if (!decision.allowed) {
      this.stats.publishDenied++;
      this.#logger.warn(
        {
          clientId: client.id,
          user: identity?.name,
          topic: packet.topic,
          qos: packet.qos,
          retain: packet.retain,
        },
        `publish denied (acknowledged and dropped): ${decision.reason}`,
      );
      packet.topic = DENIED_PUBLISH_TOPIC;
      packet.retain = false;
      packet.payload = Buffer.alloc(0);
      return null;
    }
    if (packet === this.#wills.get(client)) {
      // A will whose publish failed never reaches `published`: forget it after a while.
      const now = Date.now();
      for (const [other, since] of this.#willsInFlight)
        if (now - since > WILL_TRACKING_MS) this.#willsInFlight.delete(other);
      this.#willsInFlight.set(client, now);
    }
    return null;
  }

  /** Contract 6.1: what a logged-in register may hold (device-bounds.ts). */
  #boundProblem(identity: Identity, packet: PublishPacket): string | undefined {
    const parsed = parseTopic(this.#rules.ns, packet.topic);
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    if (parsed?.kind === 'taskStatus') {
      return (
        this.#bounds.report(payload) ??
        this.#bounds.status(parsed.deviceId, packet.topic, packet.retain, payload?.length ?? 0)
      );
    }
    if (parsed?.kind === 'state' && identity.role === 'device') return this.#bounds.state(payload);
    return undefined;
  }

  #authorizeSubscribe(client: Client, subscription: Subscription): Subscription | null {
    const identity = this.#identities.get(client);
    if (identity && this.#rules.canSubscribe(identity.role, identity.name, subscription.topic)) {
      return subscription;
    }
    // [MQTT-3.9.3]: a refused subscription is granted 0x80 (aedes does it for a null subscription).
    this.stats.subscribeDenied++;
    this.#logger.warn(
      { clientId: client.id, user: identity?.name, filter: subscription.topic },
      'subscription denied',
    );
    return null;
  }

  #published(packet: AedesPublishPacket, client: Client | null): void {
    if (!client || packet.topic === DENIED_PUBLISH_TOPIC) return;
    this.stats.messagesIn++;
    if (this.#willsInFlight.has(client) && packet.topic === this.#wills.get(client)?.topic) {
      this.#willsInFlight.delete(client);
      if (this.#willsInFlight.size === 0) this.#willsSettled?.();
    }
  }
}

function ownerKey(identity: Identity): string {
  return identity.anonymous ? '\u0000anonymous' : identity.name;
}
