/**
 * The store broker's network listeners: plain TCP and MQTT over WebSocket. Both track every
 * socket they accept, so close() also ends connections that never sent CONNECT (aedes only knows
 * clients once they have), and a port that cannot be bound says which flag to change.
 */
import { createServer as createHttpServer, type Server as HttpServer, type IncomingMessage } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer, type TLSSocket, type TlsOptions } from 'node:tls';
import { createWebSocketStream, WebSocketServer } from 'ws';

/** A port could not be bound; the message names the port and the flag to change. */
export class BrokerListenError extends Error {
  override readonly name = 'BrokerListenError';
  readonly port: number;
  readonly host: string;
  readonly flag: string;
  readonly code: string | undefined;

  constructor(host: string, port: number, flag: string, cause: NodeJS.ErrnoException) {
    const what =
      cause.code === 'EADDRINUSE'
        ? `port ${port} is already in use on ${host}`
        : cause.code === 'EACCES'
          ? `no permission to listen on port ${port} on ${host}`
          : cause.code === 'EADDRNOTAVAIL'
            ? `address ${host} is not available for port ${port}`
            : `cannot listen on ${host}:${port} (${cause.code ?? cause.message})`;
    super(`${what}: choose another port with ${flag} (${flag} 0 picks a free one)`, { cause });
    this.port = port;
    this.host = host;
    this.flag = flag;
    this.code = cause.code;
  }
}

export type ConnectionHandler = (stream: Duplex, request?: IncomingMessage) => void;

export interface Listener {
  readonly port: number;
  /** Stops accepting, destroys every socket still open, resolves once the server is closed. */
  close(): Promise<void>;
}

function listen(server: NetServer | HttpServer, port: number, host: string, flag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      reject(new BrokerListenError(host, port, flag, error));
    };
    const onListening = (): void => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

function closeServer(server: NetServer | HttpServer): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    // The error (ERR_SERVER_NOT_RUNNING) only says it was closed already.
    server.close(() => resolve());
  });
}

/**
 * Every accepted TCP connection (plain, TLS, WebSocket): tracked for close(), and with Nagle's
 * algorithm off. A store controller subscribes at QoS 0 and so sends nothing back while statuses
 * stream to it; with Nagle on, each small write waited for the ACK of the one before, which the
 * controller's kernel delays by up to 40 ms (docs/topology.md, "Mosquitto limits").
 */
function trackSockets(server: NetServer | HttpServer): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

/** Listens, and on close() stops accepting and destroys every socket still open (TCP and TLS). */
async function listenAndTrack(
  server: NetServer,
  port: number,
  host: string,
  flag: string,
): Promise<Listener> {
  const sockets = trackSockets(server);
  const boundPort = await listen(server, port, host, flag);
  return {
    port: boundPort,
    async close() {
      const closed = closeServer(server);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

export async function listenTcp(
  handle: ConnectionHandler,
  port: number,
  host: string,
  flag: string,
): Promise<Listener> {
  const server = createNetServer((socket) => handle(socket));
  return listenAndTrack(server, port, host, flag);
}

export interface TlsListenerOptions {
  cert: Buffer | string;
  key: Buffer | string;
  /** Device certificates: a client certificate must be signed by this CA (docs/broker.md, TLS). */
  clientCa?: Buffer | string;
  /** The TLS handshake must be done by then (the CONNECT time-out applies after it). */
  handshakeTimeoutMs: number;
}

/**
 * MQTT over TLS. With `clientCa` the server asks for a client certificate but does not demand
 * one (controllers log in with a password); a certificate that is presented and fails
 * verification (another CA, expired, not yet valid) ends the connection right after the
 * handshake, before any MQTT byte is read.
 */
export async function listenTls(
  handle: ConnectionHandler,
  options: TlsListenerOptions,
  onRefused: (reason: string, remote: string | undefined) => void,
  port: number,
  host: string,
  flag: string,
): Promise<Listener> {
  const tlsOptions: TlsOptions = {
    cert: options.cert,
    key: options.key,
    handshakeTimeout: options.handshakeTimeoutMs,
    ...(options.clientCa !== undefined && {
      ca: options.clientCa,
      requestCert: true,
      rejectUnauthorized: false,
    }),
  };
  const server = createTlsServer(tlsOptions, (socket: TLSSocket) => {
    if (options.clientCa !== undefined && !socket.authorized && hasPeerCertificate(socket)) {
      onRefused(`client certificate refused: ${String(socket.authorizationError)}`, socket.remoteAddress);
      socket.destroy();
      return;
    }
    handle(socket);
  });
  // A failed handshake (wrong protocol, no shared cipher, time-out) only ends that socket.
  server.on('tlsClientError', (error, socket) => {
    onRefused(`TLS handshake failed: ${error.message}`, socket.remoteAddress);
  });
  return listenAndTrack(server, port, host, flag);
}

function hasPeerCertificate(socket: TLSSocket): boolean {
  const certificate = socket.getPeerCertificate();
  return certificate !== null && Object.keys(certificate).length > 0;
}

/**
 * MQTT over WebSocket: each WebSocket becomes a duplex stream handed to aedes. A frame (or a
 * fragmented message) announcing more than `maxPayload` bytes closes the connection (1009) before
 * it is buffered; `ws` would otherwise take up to 100 MiB per connection before the packet gate
 * sees a byte.
 */
export async function listenWebSocket(
  handle: ConnectionHandler,
  onError: (error: Error) => void,
  port: number,
  host: string,
  flag: string,
  maxPayload: number,
): Promise<Listener> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain', upgrade: 'websocket' });
    res.end('MQTT over WebSocket only: connect with ws://\n');
  });
  const sockets = trackSockets(server);
  const wss = new WebSocketServer({ server, maxPayload });
  wss.on('error', onError);
  wss.on('connection', (ws, request) => {
    const stream = createWebSocketStream(ws);
    handle(stream, request);
  });
  const boundPort = await listen(server, port, host, flag);
  return {
    port: boundPort,
    async close() {
      const closed = closeServer(server);
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
