/**
 * Works around: mqtt-packet 9 buffers a packet's whole body before anything can refuse it (no
 * maximum packet size), closes without CONNACK on an unsupported protocol level, and accepts
 * malformed will flags and an UNSUBSCRIBE without filters; aedes 1.2 offers no hook before the
 * parser. Upstream report: docs/upstream/mqtt-packet-parser.md.
 * Delete when: mqtt-packet's parser takes a maximum packet size and refuses these CONNECTs and
 * UNSUBSCRIBEs, and aedes passes the size through (then set it as an aedes option).
 *
 * The store broker's gate in front of aedes' packet parser (mqtt-packet 9), per connection:
 *
 * - Maximum packet size, checked as soon as a packet's remaining length is read, before its body
 *   is buffered. MQTT 3.1.1 has no way to say "too large", so the connection is closed
 *   ([MQTT-4.8.0-1]); a client announcing a 240 MiB CONNECT costs at most one socket read.
 * - Protocol level of the CONNECT ([MQTT-3.1.2-2]): anything but 3.1.1 (level 4, "MQTT") and 3.1
 *   (level 3, "MQIsdp") gets CONNACK 0x01 "unacceptable protocol version", then the connection
 *   is closed. mqtt-packet refuses unknown levels by closing without a word, and an MQTT 5 client
 *   must be told "speak 3.1.1 instead" rather than see a network failure.
 *
 * aedes hands every connection to `new Client(broker, conn)`, which owns `_parser`; the hooks wrap
 * three of its steps (`_parseLength`, `_parseConnect`, `_parseUnsubscribe`; checked at start by
 * internals-guard.ts). test/broker/broker-limits.test.ts and test/broker/broker-conformance-*.test.ts pin them.
 */
import type { Duplex } from 'node:stream';

export class PacketTooLargeError extends Error {
  override readonly name = 'PacketTooLargeError';
  readonly announced: number;
  readonly limit: number;

  constructor(announced: number, limit: number) {
    super(`packet of ${announced} bytes announced, the limit is ${limit} (--max-packet-bytes)`);
    this.announced = announced;
    this.limit = limit;
  }
}

/** The parts of mqtt-packet's Parser the gate touches. */
interface ParserInternals {
  packet: { cmd?: string; length: number };
  error?: Error | null;
  _list: {
    length: number;
    readUInt8(offset: number): number;
    readUInt16BE(offset: number): number;
    toString(encoding: string, start: number, end: number): string;
  };
  _pos: number;
  _parseLength(): boolean;
  _parseConnect(): unknown;
  _parseUnsubscribe(): unknown;
  _emitError(error: Error): void;
  parse(buffer: Buffer): number;
}

interface GatedClient {
  conn: Duplex;
  _parser?: ParserInternals;
}

/** Fixed header: 1 byte, then the remaining length in 1 to 4 bytes ([MQTT-2.2.3]). */
function fixedHeaderBytes(remaining: number): number {
  return 1 + (remaining < 128 ? 1 : remaining < 16_384 ? 2 : remaining < 2_097_152 ? 3 : 4);
}
/** CONNACK, session present 0, return code 0x01 ([MQTT-3.2.2-4]: SP 0 with a non-zero code). */
const CONNACK_UNACCEPTABLE_PROTOCOL = Buffer.from([0x20, 0x02, 0x00, 0x01]);

export interface GateEvents {
  /** A packet over the limit was announced; the connection is being closed. */
  tooLarge(error: PacketTooLargeError): void;
  /** A CONNECT of an unsupported protocol was answered 0x01; the connection is being closed. */
  unsupportedProtocol(name: string, level: number): void;
}

/** Reads protocol name and level at the start of a CONNECT body; undefined when malformed. */
function protocolOf(parser: ParserInternals): { name: string; level: number } | undefined {
  const list = parser._list;
  const start = parser._pos;
  if (list.length < start + 2) return undefined;
  const nameLength = list.readUInt16BE(start);
  if (list.length < start + 2 + nameLength + 1) return undefined;
  const name = list.toString('utf8', start + 2, start + 2 + nameLength);
  return { name, level: list.readUInt8(start + 2 + nameLength) };
}

/**
 * The connect flags byte after the protocol level: [MQTT-3.1.2-13] and [MQTT-3.1.2-15] (no will,
 * then no will QoS and no will retain) and [MQTT-3.1.2-14] (will QoS 3) are malformed CONNECTs,
 * which mqtt-packet lets through: the connection is closed ([MQTT-4.8.0-1]).
 */
function flagsProblem(parser: ParserInternals): string | undefined {
  const list = parser._list;
  const start = parser._pos;
  const nameLength = list.readUInt16BE(start);
  const at = start + 2 + nameLength + 1;
  if (list.length <= at) return undefined;
  const flags = list.readUInt8(at);
  const will = (flags & 0x04) !== 0;
  const willQos = (flags >> 3) & 0x03;
  const willRetain = (flags & 0x20) !== 0;
  if (!will && (willQos !== 0 || willRetain)) return 'will QoS or will retain set without the will flag';
  if (willQos === 3) return 'will QoS 3';
  return undefined;
}

/**
 * Whether [MQTT-3.1.2-2] accepts it: 3.1.1 as `MQTT` level 4, 3.1 as `MQIsdp` level 3. The top
 * bit is the bridge flag a Mosquitto bridge sets with `try_private true` (0x84); aedes takes it.
 */
function supported(name: string, level: number): boolean {
  const base = level & 0x7f;
  return (name === 'MQTT' && base === 4) || (name === 'MQIsdp' && base === 3);
}

export function gateConnection(client: unknown, maxPacketBytes: number, events: GateEvents): void {
  const gated = client as GatedClient;
  const parser = gated._parser;
  if (!parser || typeof parser._parseLength !== 'function' || typeof parser._parseConnect !== 'function') {
    throw new Error(
      'aedes client without the mqtt-packet parser the store broker gates (broker/aedes-fixes/packet-gate.ts)',
    );
  }
  const parseLength = parser._parseLength;
  parser._parseLength = function gatedParseLength(this: ParserInternals): boolean {
    const done = parseLength.call(this);
    if (done && this.packet.length + fixedHeaderBytes(this.packet.length) > maxPacketBytes) {
      const error = new PacketTooLargeError(
        this.packet.length + fixedHeaderBytes(this.packet.length),
        maxPacketBytes,
      );
      events.tooLarge(error);
      this.parse = () => 0; // whatever else arrives is dropped, never buffered
      this._emitError(error); // aedes closes the connection
      return false;
    }
    return done;
  };
  const parseConnect = parser._parseConnect;
  parser._parseConnect = function gatedParseConnect(this: ParserInternals): unknown {
    const protocol = protocolOf(this);
    // A protocol name other than MQTT/MQIsdp is left to mqtt-packet: it closes without CONNACK,
    // which [MQTT-3.1.2-1] allows.
    if (
      protocol &&
      (protocol.name === 'MQTT' || protocol.name === 'MQIsdp') &&
      !supported(protocol.name, protocol.level)
    ) {
      events.unsupportedProtocol(protocol.name, protocol.level);
      this.parse = () => 0;
      // Set without emitting: the parse loop stops before this packet is handed to aedes, and
      // aedes does not destroy the socket before the CONNACK is out.
      this.error = new Error(`unsupported protocol ${protocol.name} level ${protocol.level}`);
      refuse(gated.conn);
      return undefined;
    }
    const problem = protocol ? flagsProblem(this) : undefined;
    if (problem) {
      this._emitError(new Error(`malformed CONNECT: ${problem}`));
      return undefined;
    }
    return parseConnect.call(this);
  };
  const parseUnsubscribe = parser._parseUnsubscribe;
  parser._parseUnsubscribe = function gatedParseUnsubscribe(this: ParserInternals): unknown {
    const result = parseUnsubscribe.call(this);
    // [MQTT-3.10.3-2]: an UNSUBSCRIBE carries at least one filter; mqtt-packet accepts none.
    const filters = (this.packet as { unsubscriptions?: unknown[] }).unsubscriptions;
    if (!this.error && Array.isArray(filters) && filters.length === 0) {
      this._emitError(new Error('UNSUBSCRIBE without topic filters'));
    }
    return result;
  };
}

/** CONNACK 0x01, then close once it is flushed ([MQTT-3.2.2-5]). */
function refuse(conn: Duplex): void {
  const timer = setTimeout(() => conn.destroy(), 2000);
  timer.unref();
  conn.end(CONNACK_UNACCEPTABLE_PROTOCOL, () => {
    clearTimeout(timer);
    conn.destroy();
  });
}
