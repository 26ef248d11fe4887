/**
 * One socket write per connection per turn of the event loop, instead of one per MQTT packet
 * (docs/benchmarks.md, "Status latency through the store broker").
 *
 * aedes writes each delivery from a setImmediate callback of its own, and mqtt-packet corks the
 * stream only until the next tick, so every packet became a `writev` system call of its own: with
 * Nagle's algorithm off (listeners.ts), a TCP segment each. A store controller receives the
 * statuses of every register on one connection; during a 500-register fan-out the broker's CPU
 * profile showed a third of its time in `writev`. Here the first write of a turn corks the
 * socket, and a setImmediate queued then uncorks it: the packets aedes writes until that callback
 * runs leave together. A packet written from the poll phase (a PUBACK) leaves in the check phase of
 * the same turn; one written from a setImmediate callback (a delivery) at the next turn's check
 * phase, after that turn's reads have been parsed.
 *
 * Nothing is held back beyond that, and backpressure is unchanged: a corked stream still counts
 * what it buffers against its high-water mark, so `write()` returns false as before.
 */
import type { Duplex } from 'node:stream';

interface Corkable {
  cork(): void;
  uncork(): void;
  write: Duplex['write'];
  destroyed: boolean;
  writableCorked: number;
}

export function coalesceWrites(stream: Duplex): void {
  const socket = stream as unknown as Corkable;
  if (typeof socket.cork !== 'function' || typeof socket.uncork !== 'function') return;
  let corked = false;
  const flush = (): void => {
    corked = false;
    // A destroyed stream has dropped its buffer already; uncork is harmless but pointless.
    if (!socket.destroyed) socket.uncork();
  };
  const write = socket.write;
  socket.write = function coalescedWrite(this: Corkable, ...args: Parameters<Duplex['write']>): boolean {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      setImmediate(flush);
    }
    return write.apply(this, args);
  } as Duplex['write'];
}
