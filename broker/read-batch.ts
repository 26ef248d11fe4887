/**
 * Bounds how many MQTT packets aedes parses from one connection at a time (docs/decisions/README.md,
 * "The store broker reads a bounded batch per connection"; docs/benchmarks.md, "Heap under
 * floods"). aedes 1.2 reads a connection with `conn.read(null)`, i.e. everything buffered (64 KiB
 * and more: some 600 small publishes), parses all of it at once and hands every packet to its
 * emitter, whose `concurrency` (100) leaves the rest waiting as parsed objects. Under a flood those
 * thousand-odd packets, and everything they lead to, lived long enough to reach V8's old
 * generation. Here `read()` returns at most `maxPackets` whole packets and puts the rest back at
 * the head of the stream's buffer (`unshift`, no copy): aedes reads the next slice when the batch
 * is handled, the bytes wait as bytes, and TCP pushes back on the sender once the socket's buffer
 * is full. Nothing is dropped or reordered; a packet larger than what has arrived passes through
 * as it comes, as before (aedes' parser keeps the partial packet).
 */
import type { Duplex } from 'node:stream';

/** Where the packet being read is: in its fixed header, or in its body with `skip` bytes to go. */
export class PacketBoundaries {
  /** Bytes of the current packet's body still to pass. */
  #skip = 0;
  /** True between a fixed header's first byte and the end of its remaining-length field. */
  #inHeader = false;
  #length = 0;
  #multiplier = 1;

  /**
   * How many bytes of `buf` to hand over now: up to the end of the `maxPackets`-th packet that
   * ends in it if another packet ends after it, else all of it (so what is left always holds a
   * whole packet: a slice without one would leave aedes waiting for a 'readable' event). The
   * state then stands at that point.
   */
  cut(buf: Uint8Array, maxPackets: number): number {
    let pos = 0;
    let ended = 0;
    let cutAt = -1;
    let saved: [number, boolean, number, number] = [0, false, 0, 1];
    const end = buf.length;
    while (pos < end) {
      let endedHere = false;
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, end - pos);
        pos += take;
        this.#skip -= take;
        endedHere = this.#skip === 0;
      } else if (!this.#inHeader) {
        pos += 1; // the packet type and flags
        this.#inHeader = true;
        this.#length = 0;
        this.#multiplier = 1;
      } else {
        // The remaining length: 1 to 4 bytes, 7 bits each, low first [MQTT-2.2.3]. A malformed one
        // (more than 4 bytes) is aedes' parser's to refuse; here it only ends the header.
        const byte = buf[pos]!;
        pos += 1;
        this.#length += (byte & 0x7f) * this.#multiplier;
        this.#multiplier *= 128;
        if (!(byte & 0x80) || this.#multiplier > 128 ** 3) {
          this.#inHeader = false;
          this.#skip = this.#length;
          endedHere = this.#skip === 0;
        }
      }
      if (!endedHere) continue;
      ended += 1;
      if (ended === maxPackets) {
        cutAt = pos;
        saved = [this.#skip, this.#inHeader, this.#length, this.#multiplier];
      } else if (ended > maxPackets) {
        [this.#skip, this.#inHeader, this.#length, this.#multiplier] = saved;
        return cutAt;
      }
    }
    return end;
  }
}

/**
 * Makes `stream.read()` (without a size, as aedes calls it) return at most `maxPackets` packets.
 * Call right after `aedes.handle(stream)`, which adds the 'readable' listener this wraps. Returns
 * false, and changes nothing, when that listener is not the only one (another aedes version).
 */
export function boundReadBatch(stream: Duplex, maxPackets: number): boolean {
  const listeners = stream.listeners('readable');
  if (listeners.length !== 1) return false;
  const nextBatch = listeners[0] as () => void;
  const boundaries = new PacketBoundaries();
  const read = stream.read.bind(stream);
  /**
   * Bytes put back at the head of the buffer behind a slice of whole packets aedes is handling.
   * They are read back by their exact length, so the buffer hands back that very Buffer (no copy
   * of it with what arrived since). While they wait, aedes reads again when its batch is done, so
   * a 'readable' event (the one `unshift` itself schedules, or new bytes arriving) must not start
   * another batch beside it.
   */
  let putBack = 0;
  stream.read = (size?: number | null): unknown => {
    if (size != null) return read(size);
    const chunk = read(putBack > 0 ? putBack : undefined) as Buffer | string | null;
    putBack = 0;
    if (chunk === null || typeof chunk === 'string') return chunk;
    const take = boundaries.cut(chunk, maxPackets);
    if (take >= chunk.length) return chunk;
    putBack = chunk.length - take;
    stream.unshift(chunk.subarray(take));
    return chunk.subarray(0, take);
  };
  stream.removeListener('readable', nextBatch);
  stream.on('readable', () => {
    if (putBack === 0) nextBatch();
  });
  return true;
}
