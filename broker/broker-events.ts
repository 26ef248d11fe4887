/**
 * What the store broker logs of aedes' events (docs/broker.md, "Logs"): client errors (a peer
 * that went away only at debug), keep-alive time-outs, persistence and will sweep errors (an
 * unhandled 'error' would end the process); and the gatekeeper's view of clients coming and going.
 */
import type { EventEmitter } from 'node:events';
import type { Aedes, Client } from 'aedes';
import type { Logger } from '../src/logger.ts';
import type { Gatekeeper } from './gatekeeper.ts';

/** Connection errors that only mean a peer went away. */
const ROUTINE_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

export function logBrokerEvents(aedes: Aedes, gatekeeper: Gatekeeper, logger: Logger): void {
  aedes.on('clientReady', (client) => gatekeeper.onClientReady(client));
  aedes.on('clientDisconnect', (client) => gatekeeper.onClientDisconnect(client));
  const onClientError = (client: Client, error: Error): void => {
    // Refused connections were logged where they were decided.
    if (error.name === 'ConnectRefused' || error.name === 'PacketTooLargeError') return;
    const code = (error as NodeJS.ErrnoException).code;
    const fields = {
      clientId: client?.id,
      user: client && gatekeeper.identity(client)?.name,
      err: error.message,
    };
    if (code && ROUTINE_ERRORS.has(code)) logger.debug(fields, 'client connection lost');
    else logger.warn(fields, 'client error');
  };
  aedes.on('clientError', onClientError);
  aedes.on('connectionError', onClientError);
  aedes.on('keepaliveTimeout', (client) =>
    logger.info({ clientId: client.id }, 'client keep-alive timed out'),
  );
  // Persistence and will sweeps report here; an unhandled 'error' would end the process.
  (aedes as EventEmitter).on('error', (error: unknown) =>
    logger.error({ err: error instanceof Error ? error.message : String(error) }, 'broker error'),
  );
}
