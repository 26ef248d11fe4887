/**
 * The store broker's admission of a connection from any listener (docs/broker.md, "Security"):
 * before login it counts against its address (`--max-pending-per-address`), after it against
 * `--max-connections` (CONNACK 3), so idle sockets cannot lock registers out. Every connection
 * gets the packet gate (broker/aedes-fixes/packet-gate.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Aedes, AedesOptions, Client } from 'aedes';
import type { Logger } from '../src/logger.ts';
import { gateConnection } from './aedes-fixes/packet-gate.ts';
import { refusal, SERVER_UNAVAILABLE } from './credentials.ts';
import type { BrokerLimits } from './limits.ts';
import type { ConnectionHandler } from './listeners.ts';

type Limits = Pick<BrokerLimits, 'maxConnections' | 'maxPendingPerAddress' | 'maxPacketBytes'>;
type Authenticate = NonNullable<AedesOptions['authenticate']>;

/** The peer's address, IPv4-mapped IPv6 written as IPv4; WebSocket streams through their request. */
function addressOf(stream: Duplex, request: IncomingMessage | undefined): string {
  const address =
    (stream as { remoteAddress?: string }).remoteAddress ?? request?.socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** A connection's place in the counts: waiting for its login, logged in as a client id, or gone. */
interface Admitted {
  address: string;
  loggedIn: string | undefined;
}

export class ConnectionAdmission {
  /** Open connections of every listener, logged in or not. */
  connections = 0;
  /** Connections closed at once (`maxPendingPerAddress`) and logins refused (`maxConnections`). */
  refused = 0;
  readonly #limits: Limits;
  readonly #logger: Logger;
  /** Connections not logged in yet, per address. */
  readonly #pending = new Map<string, number>();
  /** Logged-in connections per client id (two for a moment during a takeover). */
  readonly #loggedIn = new Map<string, number>();
  #loggedInCount = 0;
  readonly #admitted = new WeakMap<Client, Admitted>();
  #lastWarning = 0;

  constructor(limits: Limits, logger: Logger) {
    this.#limits = limits;
    this.#logger = logger;
  }

  /** Clients logged in now (the `maxConnections` count). */
  get loggedIn(): number {
    return this.#loggedInCount;
  }

  /** What every listener hands its connections to. */
  handler(aedes: Aedes): ConnectionHandler {
    const { maxPendingPerAddress, maxPacketBytes } = this.#limits;
    return (stream, request) => {
      const address = addressOf(stream, request);
      const pending = this.#pending.get(address) ?? 0;
      if (pending >= maxPendingPerAddress) {
        this.refused++;
        this.#warn(
          { address, maxPendingPerAddress },
          'connection refused: --max-pending-per-address reached',
        );
        stream.destroy();
        return;
      }
      this.#pending.set(address, pending + 1);
      this.connections++;
      const admitted: Admitted = { address, loggedIn: undefined };
      stream.once('close', () => {
        this.connections--;
        if (admitted.loggedIn === undefined) this.#release(address);
        else this.#logOut(admitted.loggedIn);
      });
      const client = aedes.handle(stream, request as never);
      this.#admitted.set(client, admitted);
      gateConnection(client, maxPacketBytes, {
        tooLarge: (error) =>
          this.#logger.warn(
            { remote: address, announced: error.announced, limit: error.limit },
            'packet too large: connection closed',
          ),
        unsupportedProtocol: (name, level) =>
          this.#logger.info(
            { remote: address, protocol: name, level },
            'unsupported protocol level: CONNACK 1',
          ),
      });
    };
  }

  /** aedes' `authenticate` hook around `next`: once the credentials pass, the logged-in cap. */
  authenticate(next: Authenticate): Authenticate {
    return (client, username, password, callback) =>
      next(client, username, password, (error, success) => {
        const admitted = this.#admitted.get(client);
        if (error || !success || !admitted || admitted.loggedIn !== undefined) {
          callback(error, success);
          return;
        }
        const takeover = (this.#loggedIn.get(client.id) ?? 0) > 0;
        if (!takeover && this.#loggedInCount >= this.#limits.maxConnections) {
          this.refused++;
          const { maxConnections } = this.#limits;
          this.#warn({ clientId: client.id, maxConnections }, 'login refused: --max-connections reached');
          callback(refusal(SERVER_UNAVAILABLE, '--max-connections clients are logged in'), false);
          return;
        }
        this.#release(admitted.address);
        admitted.loggedIn = client.id;
        this.#loggedIn.set(client.id, (this.#loggedIn.get(client.id) ?? 0) + 1);
        this.#loggedInCount++;
        callback(null, true);
      });
  }

  #release(address: string): void {
    const left = (this.#pending.get(address) ?? 1) - 1;
    if (left > 0) this.#pending.set(address, left);
    else this.#pending.delete(address);
  }

  #logOut(clientId: string): void {
    this.#loggedInCount--;
    const left = (this.#loggedIn.get(clientId) ?? 1) - 1;
    if (left > 0) this.#loggedIn.set(clientId, left);
    else this.#loggedIn.delete(clientId);
  }

  /** One line per second at most: a flood must not flood the log too. */
  #warn(fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - this.#lastWarning <= 1000) return;
    this.#lastWarning = now;
    this.#logger.warn({ ...fields, refused: this.refused }, message);
  }
}
