/**
 * The store broker's admission of a connection, whichever listener it came from (docs/broker.md,
 * "Security"): the connection cap (`--max-connections`), then aedes with the packet gate on its
 * parser (broker/packet-gate.ts). Nothing is buffered for a refused connection.
 */
import type { Aedes } from 'aedes';
import type { Logger } from '../src/logger.ts';
import { gateConnection } from './aedes-fixes/packet-gate.ts';
import type { BrokerLimits } from './limits.ts';
import type { ConnectionHandler } from './listeners.ts';

function remoteOf(stream: unknown): string | undefined {
  const socket = stream as { remoteAddress?: string; socket?: { remoteAddress?: string } };
  return socket.remoteAddress ?? socket.socket?.remoteAddress;
}

export class ConnectionAdmission {
  /** Open connections of every listener, logged in or not. */
  connections = 0;
  /** Connections closed at once because `maxConnections` were open. */
  refused = 0;
  readonly #limits: Pick<BrokerLimits, 'maxConnections' | 'maxPacketBytes'>;
  readonly #logger: Logger;

  constructor(limits: Pick<BrokerLimits, 'maxConnections' | 'maxPacketBytes'>, logger: Logger) {
    this.#limits = limits;
    this.#logger = logger;
  }

  /** What every listener hands its connections to. */
  handler(aedes: Aedes): ConnectionHandler {
    const logger = this.#logger;
    const { maxConnections, maxPacketBytes } = this.#limits;
    let lastCapWarning = 0;
    return (stream, request) => {
      if (this.connections >= maxConnections) {
        this.refused++;
        // One line per second at most: a flood must not flood the log too.
        const now = Date.now();
        if (now - lastCapWarning > 1000) {
          lastCapWarning = now;
          logger.warn(
            { maxConnections, refused: this.refused },
            'connection refused: --max-connections reached',
          );
        }
        stream.destroy();
        return;
      }
      this.connections++;
      stream.once('close', () => this.connections--);
      const client = aedes.handle(stream, request as never);
      gateConnection(client, maxPacketBytes, {
        tooLarge: (error) =>
          logger.warn(
            { remote: remoteOf(stream), announced: error.announced, limit: error.limit },
            'packet too large: connection closed',
          ),
        unsupportedProtocol: (name, level) =>
          logger.info(
            { remote: remoteOf(stream), protocol: name, level },
            'unsupported protocol level: CONNACK 1',
          ),
      });
    };
  }
}
