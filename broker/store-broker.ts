/**
 * The embedded store broker (README "Command line", `regbridge broker` and `serve --broker-port`):
 * aedes 1.2 (MQTT 3.1.1) with per-role ACL, a TCP and an optional WebSocket listener, and
 * optional Redis so several instances share retained messages, wills and fan-out.
 */
import type { Aedes, Client } from 'aedes';
import { assertNamespace } from '../bridge/contract/topics.ts';
import { LoginThrottle } from '../src/auth/login-throttle.ts';
import { AccessRules } from './access-rules.ts';
import { SessionBacklog } from './aedes-fixes/session-backlog.ts';
import { createStoreAedes } from './aedes-instance.ts';
import { ConnectionAdmission } from './connection-admission.ts';
import { type BrokerStats, Gatekeeper } from './gatekeeper.ts';
import { type BrokerLimits, DEFAULT_BROKER_LIMITS } from './limits.ts';
import { type Listener, listenTcp, listenTls, listenWebSocket } from './listeners.ts';
import type { RedisBackend } from './redis-backend.ts';
import type { StoreBrokerOptions } from './store-broker-options.ts';
import { type BrokerUser, UserDirectory } from './users.ts';

export { AccessRules, filterWithin, topicMatches } from './access-rules.ts';
export { type BrokerStats, DENIED_PUBLISH_TOPIC } from './gatekeeper.ts';
export { type BrokerLimits, DEFAULT_BROKER_LIMITS } from './limits.ts';
export { BrokerListenError } from './listeners.ts';
export { BrokerRedisError } from './redis-error.ts';
export type { StoreBrokerOptions } from './store-broker-options.ts';
export {
  BROKER_ROLES,
  type BrokerRole,
  type BrokerUser,
  loadUsersFile,
  parseUserSpec,
  UserSpecError,
} from './users.ts';

import { disableMqttPacketNumberCache } from '../src/mqtt-packet-cache.ts';

/** How long stop() waits for its clients to go and their wills to be delivered. */
const STOP_GRACE_MS = 2000;

export class StoreBroker {
  readonly #options: StoreBrokerOptions;
  #directory: UserDirectory | undefined;
  #aedes: Aedes | undefined;
  /** Logins and every packet pass it; built here so stats, identities and reloads need no start(). */
  readonly #gatekeeper: Gatekeeper;
  #redis: RedisBackend | undefined;
  #tcp: Listener | undefined;
  #ws: Listener | undefined;
  #tls: Listener | undefined;
  #state: 'new' | 'starting' | 'started' | 'stopped' = 'new';
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  readonly #limits: Readonly<BrokerLimits>;
  /** Open connections of every listener: pending ones per address, logged-in ones against `maxConnections`. */
  readonly #admission: ConnectionAdmission;
  /** Failed logins per address and user name (the REST API's rule); its sweep timer runs from start() to stop(). */
  readonly #logins: LoginThrottle;
  readonly #backlog: SessionBacklog;

  constructor(options: StoreBrokerOptions) {
    disableMqttPacketNumberCache(); // 6 MiB of packet-id buffers (src/mqtt-packet-cache.ts)
    this.#options = options;
    this.#limits = Object.freeze({ ...DEFAULT_BROKER_LIMITS, ...options.limits });
    this.#admission = new ConnectionAdmission(this.#limits, options.logger);
    this.#backlog = new SessionBacklog(this.#limits.maxSessionInflight);
    // One limit for addresses and names; past it a name refuses only addresses that failed as it.
    this.#logins = new LoginThrottle({
      maxFailures: this.#limits.loginMaxFailures,
      userMaxFailures: this.#limits.loginMaxFailures,
      windowMs: this.#limits.loginWindowMs,
    });
    // Reads the users through #users(), so a SIGHUP reload (reloadUsers) reaches it at once.
    this.#gatekeeper = new Gatekeeper(
      () => this.#users(),
      new AccessRules(assertNamespace(options.ns)),
      options.allowAnonymous ?? false,
      options.logger,
      this.#logins,
      this.#limits.maxRetainedStatuses,
      this.#limits.maxReportBytes,
    );
  }

  get limits(): Readonly<BrokerLimits> {
    return this.#limits;
  }

  get port(): number {
    if (!this.#tcp) throw new Error('the store broker is not started');
    return this.#tcp.port;
  }

  get wsPort(): number | undefined {
    return this.#ws?.port;
  }

  get tlsPort(): number | undefined {
    return this.#tls?.port;
  }

  /** Counters of this instance (cheap; for /metrics and logs). */
  get stats(): BrokerStats {
    return {
      clients: this.#aedes?.connectedClients ?? 0,
      ...this.#gatekeeper.stats,
      connections: this.#admission.connections,
      connectionsRefused: this.#admission.refused,
      publishesHeld: this.#backlog.held,
    };
  }

  /** Adds a user, before or after start (`serve` adds its own device credential). */
  addUser(user: BrokerUser): void {
    this.#users().add(user);
  }

  /**
   * Replaces every user (SIGHUP on `regbridge broker`). The new list is checked whole first: on a
   * problem nothing changes and UserSpecError says why. Clients logged in with a password whose
   * entry is gone or changed (password, hash or role) are disconnected; all others stay.
   */
  reloadUsers(users: readonly BrokerUser[]): { users: number; disconnected: string[] } {
    const next = new UserDirectory(users);
    const previous = this.#users();
    this.#directory = next;
    const disconnected: string[] = [];
    const clients =
      (this.#aedes as unknown as { clients?: Record<string, Client> } | undefined)?.clients ?? {};
    for (const client of Object.values(clients)) {
      const identity = this.#gatekeeper.identity(client);
      if (identity?.via !== 'password') continue;
      const before = previous.get(identity.name);
      const after = next.get(identity.name);
      if (after && before && after.password === before.password && after.role === before.role) continue;
      disconnected.push(identity.name);
      client.close();
    }
    this.#options.logger.info({ users: next.size, disconnected: disconnected.length }, 'users reloaded');
    return { users: next.size, disconnected };
  }

  start(): Promise<void> {
    if (this.#state !== 'new') {
      return Promise.reject(new Error(`the store broker cannot start: it is ${this.#state}`));
    }
    this.#state = 'starting';
    this.#starting = this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const { host = '0.0.0.0', logger } = this.#options;
    try {
      const gatekeeper = this.#gatekeeper;
      this.#logins.start();
      this.#users(); // a bad or duplicate user fails here, before any port is taken
      if (this.#options.redisUrl) {
        // Loaded only here: ioredis and the Redis emitter and persistence are dozens of modules a
        // broker without --redis-url (every device's embedded one) never needs.
        const { createRedisBackend } = await import('./redis-backend.ts');
        this.#redis = await createRedisBackend(this.#options.redisUrl, logger);
      }
      this.#aedes = await createStoreAedes({
        limits: this.#limits,
        gatekeeper,
        admission: this.#admission,
        redis: this.#redis,
        backlog: this.#backlog,
        logger,
      });
      const admit = this.#admission.handler(this.#aedes);
      this.#tcp = await listenTcp(admit, this.#options.port, host, this.#options.portFlag ?? '--port');
      const tls = this.#options.tls;
      if (tls) {
        this.#tls = await listenTls(
          admit,
          {
            cert: tls.cert,
            key: tls.key,
            ...(tls.clientCa !== undefined && { clientCa: tls.clientCa }),
            handshakeTimeoutMs: this.#limits.connectTimeoutMs,
          },
          (reason, remote) => logger.warn({ remote }, reason),
          tls.port,
          host,
          tls.portFlag ?? '--tls-port',
        );
      }
      if (this.#options.wsPort !== undefined) {
        this.#ws = await listenWebSocket(
          admit,
          (error) => logger.warn({ err: error.message }, 'websocket server error'),
          this.#options.wsPort,
          host,
          this.#options.wsPortFlag ?? '--ws-port',
          this.#limits.maxPacketBytes,
        );
      }
    } catch (error) {
      await this.#shutdownOnce();
      throw error;
    }
    this.#state = 'started';
    logger.info(
      {
        port: this.#tcp.port,
        wsPort: this.#ws?.port,
        tlsPort: this.#tls?.port,
        deviceCertificates: this.#options.tls?.clientCa !== undefined,
        host,
        ns: this.#options.ns,
        userCount: this.#users().size,
        allowAnonymous: this.#options.allowAnonymous ?? false,
        redis: this.#redis?.safeUrl,
      },
      'store broker started',
    );
  }

  /** Closes every client socket, both listeners, aedes, its persistence and emitter. Idempotent. */
  async stop(): Promise<void> {
    if (this.#state === 'new') {
      this.#state = 'stopped';
      return;
    }
    // A stop() during start() waits for it, so nothing is left listening afterwards.
    await this.#starting?.catch(() => undefined);
    await this.#shutdownOnce();
  }

  #shutdownOnce(): Promise<void> {
    // A start that failed (a taken port the device then retries elsewhere) is not a stop: only a
    // broker that was running logs "stopped".
    const wasStarted = this.#state === 'started';
    this.#stopping ??= this.#shutdown().finally(() => {
      this.#state = 'stopped';
      if (wasStarted) this.#options.logger.info('store broker stopped');
      else this.#options.logger.debug('store broker start abandoned');
    });
    return this.#stopping;
  }

  #users(): UserDirectory {
    this.#directory ??= new UserDirectory(this.#options.users);
    return this.#directory;
  }

  async #shutdown(): Promise<void> {
    const logger = this.#options.logger;
    const [tcp, ws, tls, aedes, redis] = [this.#tcp, this.#ws, this.#tls, this.#aedes, this.#redis];
    // Sockets first, so every client's will is published while the emitter (and Redis) is still
    // open: other cluster instances then see the clients of this one go offline.
    await Promise.all([tcp?.close(), ws?.close(), tls?.close()]);
    if (aedes) {
      await this.#waitForClientsGone(aedes);
      await this.#gatekeeper.willsSettled(STOP_GRACE_MS);
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      if (!redis) {
        // aedes' close() ends the emitter but not the persistence (in memory here).
        const persistence = (aedes as unknown as { persistence?: { destroy(): Promise<void> } }).persistence;
        await persistence
          ?.destroy()
          .catch((error: Error) => logger.warn({ err: error.message }, 'persistence close'));
      }
    }
    await redis?.close();
    this.#logins.stop();
  }

  #waitForClientsGone(aedes: Aedes): Promise<void> {
    if (aedes.connectedClients <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        aedes.off('clientDisconnect', check);
        resolve();
      };
      const check = (): void => {
        if (aedes.connectedClients <= 0) done();
      };
      const timer = setTimeout(done, STOP_GRACE_MS);
      aedes.on('clientDisconnect', check);
    });
  }
}
