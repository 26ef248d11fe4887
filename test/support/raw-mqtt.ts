/**
 * MQTT 3.1.1 over a bare socket, for tests that must see exactly what a broker answers (a client
 * library would hide a missing CONNACK, a DUP flag or a second copy). Packets are built by hand
 * ([MQTT-2] fixed header, [MQTT-3.x] variable headers); the decoder knows the packets a server
 * sends. No retries, no reconnects: every wait has a time-out and says what it saw.
 */
import net from 'node:net';

export const TYPE = {
  CONNECT: 1,
  CONNACK: 2,
  PUBLISH: 3,
  PUBACK: 4,
  PUBREC: 5,
  PUBREL: 6,
  PUBCOMP: 7,
  SUBSCRIBE: 8,
  SUBACK: 9,
  UNSUBSCRIBE: 10,
  UNSUBACK: 11,
  PINGREQ: 12,
  PINGRESP: 13,
  DISCONNECT: 14,
} as const;

const NAMES = Object.fromEntries(Object.entries(TYPE).map(([name, code]) => [code, name]));

function varLength(length: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    bytes.push(byte);
  } while (length > 0);
  return Buffer.from(bytes);
}

function str(text: string | Buffer): Buffer {
  const body = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const length = Buffer.alloc(2);
  length.writeUInt16BE(body.length);
  return Buffer.concat([length, body]);
}

function u16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16BE(value);
  return buffer;
}

/** A packet: first byte (type << 4 | flags), remaining length, body. */
export function packet(type: number, flags: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([(type << 4) | flags]), varLength(body.length), body]);
}

export interface ConnectOptions {
  clientId?: string;
  clean?: boolean;
  keepalive?: number;
  username?: string;
  password?: string;
  will?: { topic: string; payload: string | Buffer; qos?: 0 | 1 | 2; retain?: boolean };
  /** Protocol name; `MQTT` unless given. */
  protocolName?: string;
  /** Protocol level; 4 (3.1.1) unless given. */
  level?: number;
  /** Bits OR-ed into the connect flags (to set reserved or inconsistent bits on purpose). */
  extraFlags?: number;
  /** MQTT 5 properties length byte(s) after keep alive (a level 5 CONNECT carries them). */
  v5Properties?: boolean;
}

export function connect(options: ConnectOptions = {}): Buffer {
  const { clientId = '', clean = true, keepalive = 60, username, password, will } = options;
  let flags = options.extraFlags ?? 0;
  if (clean) flags |= 0x02;
  if (will) flags |= 0x04 | ((will.qos ?? 0) << 3) | (will.retain ? 0x20 : 0);
  if (password !== undefined) flags |= 0x40;
  if (username !== undefined) flags |= 0x80;
  const parts = [
    str(options.protocolName ?? 'MQTT'),
    Buffer.from([options.level ?? 4, flags]),
    u16(keepalive),
    ...(options.v5Properties ? [Buffer.from([0])] : []),
    str(clientId),
  ];
  if (will) {
    if (options.v5Properties) parts.push(Buffer.from([0]));
    parts.push(str(will.topic), str(will.payload));
  }
  if (username !== undefined) parts.push(str(username));
  if (password !== undefined) parts.push(str(password));
  return packet(TYPE.CONNECT, 0, ...parts);
}

export function publish(options: {
  topic: string;
  payload?: string | Buffer;
  qos?: 0 | 1 | 2 | 3;
  retain?: boolean;
  dup?: boolean;
  id?: number;
}): Buffer {
  const { topic, payload = '', qos = 0, retain = false, dup = false, id = 1 } = options;
  const flags = (dup ? 0x08 : 0) | (qos << 1) | (retain ? 0x01 : 0);
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return packet(TYPE.PUBLISH, flags, str(topic), ...(qos > 0 ? [u16(id)] : []), body);
}

export function subscribe(id: number, filters: [string, number][], flags = 0x02): Buffer {
  return packet(
    TYPE.SUBSCRIBE,
    flags,
    u16(id),
    ...filters.map(([f, q]) => Buffer.concat([str(f), Buffer.from([q])])),
  );
}

export function unsubscribe(id: number, filters: string[], flags = 0x02): Buffer {
  return packet(TYPE.UNSUBSCRIBE, flags, u16(id), ...filters.map((f) => str(f)));
}

/** PUBACK, PUBREC, PUBREL (flags 2) or PUBCOMP for packet `id`. */
export function ack(type: number, id: number): Buffer {
  return packet(type, type === TYPE.PUBREL ? 0x02 : 0, u16(id));
}

export const pingreq = (): Buffer => packet(TYPE.PINGREQ, 0);
export const disconnect = (): Buffer => packet(TYPE.DISCONNECT, 0);

export interface Received {
  type: number;
  name: string;
  flags: number;
  body: Buffer;
  /** CONNACK */
  sessionPresent?: boolean;
  returnCode?: number;
  /** PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP, SUBACK, UNSUBACK */
  id?: number;
  /** SUBACK return codes */
  codes?: number[];
  /** PUBLISH */
  topic?: string;
  payload?: Buffer;
  qos?: number;
  retain?: boolean;
  dup?: boolean;
}

function decode(type: number, flags: number, body: Buffer): Received {
  const received: Received = { type, name: NAMES[type] ?? `type ${type}`, flags, body };
  switch (type) {
    case TYPE.CONNACK:
      received.sessionPresent = ((body[0] ?? 0) & 0x01) === 1;
      received.returnCode = body[1];
      break;
    case TYPE.PUBLISH: {
      const topicLength = body.readUInt16BE(0);
      received.topic = body.subarray(2, 2 + topicLength).toString('utf8');
      received.qos = (flags >> 1) & 0x03;
      received.retain = (flags & 0x01) === 1;
      received.dup = (flags & 0x08) !== 0;
      let offset = 2 + topicLength;
      if (received.qos > 0) {
        received.id = body.readUInt16BE(offset);
        offset += 2;
      }
      received.payload = body.subarray(offset);
      break;
    }
    case TYPE.SUBACK:
      received.id = body.readUInt16BE(0);
      received.codes = [...body.subarray(2)];
      break;
    case TYPE.PUBACK:
    case TYPE.PUBREC:
    case TYPE.PUBREL:
    case TYPE.PUBCOMP:
    case TYPE.UNSUBACK:
      received.id = body.readUInt16BE(0);
      break;
  }
  return received;
}

type Predicate = (packet: Received) => boolean;

/** One raw connection: everything the broker sends is decoded and kept in `packets`. */
export class RawClient {
  readonly socket: net.Socket;
  readonly packets: Received[] = [];
  #buffer = Buffer.alloc(0);
  #closed = false;
  readonly #taken = new Set<Received>();
  readonly #closedPromise: Promise<void>;
  readonly #listeners = new Set<() => void>();

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.#closedPromise = new Promise((resolve) => {
      socket.once('close', () => {
        this.#closed = true;
        this.#notify();
        resolve();
      });
    });
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#drain();
    });
  }

  /** `localAddress` (another loopback address, 127.0.0.2) makes the broker see another peer. */
  static open(port: number, host = '127.0.0.1', localAddress?: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host, ...(localAddress && { localAddress }) });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawClient(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Opens a connection and sends CONNECT; resolves with the CONNACK. */
  static async connected(
    port: number,
    options: ConnectOptions,
    localAddress?: string,
  ): Promise<{ client: RawClient; connack: Received }> {
    const client = await RawClient.open(port, '127.0.0.1', localAddress);
    client.send(connect(options));
    const connack = await client.next(TYPE.CONNACK);
    return { client, connack };
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(...buffers: Buffer[]): void {
    this.socket.write(Buffer.concat(buffers));
  }

  #drain(): void {
    for (;;) {
      if (this.#buffer.length < 2) break;
      let length = 0;
      let multiplier = 1;
      let index = 1;
      let complete = false;
      while (index < this.#buffer.length && index <= 4) {
        const byte = this.#buffer[index] ?? 0;
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        index++;
        if ((byte & 0x80) === 0) {
          complete = true;
          break;
        }
      }
      if (!complete || this.#buffer.length < index + length) break;
      const first = this.#buffer[0] ?? 0;
      const body = this.#buffer.subarray(index, index + length);
      this.#buffer = this.#buffer.subarray(index + length);
      this.packets.push(decode(first >> 4, first & 0x0f, Buffer.from(body)));
    }
    this.#notify();
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }

  /**
   * The first packet not yet taken that matches; taken packets are not returned again, so
   * `next(PUBLISH)` twice gives two different deliveries.
   */
  next(type: number | Predicate, timeoutMs = 5000): Promise<Received> {
    const predicate: Predicate = typeof type === 'number' ? (p) => p.type === type : type;
    const what = typeof type === 'number' ? (NAMES[type] ?? String(type)) : 'a matching packet';
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const found = this.packets.find((p) => !this.#taken.has(p) && predicate(p));
        if (found) {
          this.#taken.add(found);
          done();
          resolve(found);
        } else if (this.#closed) {
          done();
          reject(new Error(`connection closed while waiting for ${what}; received: ${this.#seen()}`));
        }
      };
      const done = (): void => {
        clearTimeout(timer);
        this.#listeners.delete(check);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received: ${this.#seen()}`));
      }, timeoutMs);
      this.#listeners.add(check);
      check();
    });
  }

  #seen(): string {
    return this.packets.map((p) => p.name + (p.topic ? ` ${p.topic}` : '')).join(', ') || 'nothing';
  }

  /** Resolves when the broker has closed the connection; fails after `timeoutMs`. */
  async waitClosed(timeoutMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `the broker did not close the connection within ${timeoutMs} ms; received: ${this.#seen()}`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.#closedPromise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Proves that nothing matching arrives: a PINGREQ round trip goes after everything the broker
   * had to send for what came before it (packets on one connection keep their order).
   */
  async settle(timeoutMs = 5000): Promise<void> {
    this.send(pingreq());
    await this.next(TYPE.PINGRESP, timeoutMs);
  }

  /** Packets of `type` not yet taken by next(). */
  pending(type: number): Received[] {
    return this.packets.filter((p) => p.type === type && !this.#taken.has(p));
  }

  /** Closes the socket without DISCONNECT (an abnormal end: the will is published). */
  drop(): Promise<void> {
    this.socket.destroy();
    return this.#closedPromise;
  }

  /** DISCONNECT, then close. */
  async end(): Promise<void> {
    if (!this.#closed) {
      this.socket.end(disconnect());
    }
    await this.#closedPromise;
  }
}
