/**
 * Where a FINISHED status spends its time inside the store broker (status-under-load.ts
 * `--stages`, bench only): for each FINISHED status publish, the moment aedes' parser produced it
 * (read from the register's socket), the moment aedes started to publish it (after its PUBACK was
 * written) and the moment its payload was handed to the controller's socket (the socket's
 * `_write`/`_writev`, i.e. when the corked writes left). Stamped with lib/scenario.ts's nowMs(),
 * keyed `deviceId/taskId`. Installed by patching aedes' prototype before the broker starts; it
 * costs a topic test per packet and a WeakMap lookup per written chunk, so figures taken with it
 * are for finding the tail, never the documented ones.
 */
import { Aedes } from 'aedes';
import { nowMs } from './scenario.ts';

export interface StageStamps {
  /** deviceId/taskId -> [parsed, publish started, written to the controller], ms */
  stamps: Array<[string, number, number, number]>;
}

interface Chunk {
  chunk: unknown;
}

type Writer = (this: unknown, ...args: unknown[]) => void;

const received = new Map<string, [number, number, number]>();
/** The payload Buffer aedes forwards is the one the parser produced: it names the status. */
const payloads = new WeakMap<object, string>();
const FINISHED = Buffer.from('"status":"FINISHED"');

function keyOf(packet: { cmd?: string; topic?: string; payload?: unknown }): string | undefined {
  if (packet.cmd !== 'publish' || typeof packet.topic !== 'string' || !packet.topic.endsWith('/status'))
    return;
  const payload = packet.payload;
  if (!Buffer.isBuffer(payload) || payload.indexOf(FINISHED) < 0) return;
  const parts = packet.topic.split('/'); // <ns>/devices/<id>/tasks/<taskId>/status
  return `${parts[parts.length - 4]}/${parts[parts.length - 2]}`;
}

function stampWritten(chunk: unknown, t: number): void {
  if (typeof chunk !== 'object' || chunk === null) return;
  const key = payloads.get(chunk);
  if (key === undefined) return;
  const entry = received.get(key);
  if (entry && entry[2] === 0) entry[2] = t;
}

function instrument(broker: { handle(conn: unknown, req: unknown): unknown }): void {
  const handle = broker.handle;
  // aedes sets handle on the instance (its constructor), so it is wrapped per broker
  broker.handle = (conn: unknown, req: unknown) => {
    const client = handle.call(broker, conn, req) as {
      _parser: { prependListener(event: string, fn: (packet: never) => void): void };
    };
    client._parser.prependListener('packet', (packet: { payload?: unknown }) => {
      const key = keyOf(packet);
      if (key === undefined) return;
      received.set(key, [nowMs(), 0, 0]);
      payloads.set(packet.payload as object, key);
    });
    const socket = conn as { _write?: Writer; _writev?: Writer };
    const write = socket._write;
    const writev = socket._writev;
    if (typeof write === 'function') {
      socket._write = function (this: unknown, ...args: unknown[]) {
        stampWritten(args[0], nowMs());
        write.apply(this, args);
      };
    }
    if (typeof writev === 'function') {
      socket._writev = function (this: unknown, ...args: unknown[]) {
        const t = nowMs();
        for (const c of args[0] as Chunk[]) stampWritten(c.chunk, t);
        writev.apply(this, args);
      };
    }
    return client;
  };
}

export function installStageStamps(): void {
  const proto = Aedes.prototype as unknown as {
    publish(packet: unknown, client: unknown, done: unknown): void;
  };
  const publish = proto.publish;
  proto.publish = function (this: unknown, packet: unknown, client: unknown, done: unknown) {
    const key = keyOf(packet as { cmd?: string });
    if (key !== undefined) {
      const entry = received.get(key);
      if (entry && entry[1] === 0) entry[1] = nowMs();
    }
    publish.call(this, packet, client, done);
  };
  const statics = Aedes as unknown as { createBroker(opts: unknown): Promise<unknown> };
  const create = statics.createBroker;
  statics.createBroker = async (opts: unknown) => {
    const broker = (await create.call(Aedes, opts)) as { handle(conn: unknown, req: unknown): unknown };
    instrument(broker);
    return broker;
  };
}

/** The stamps since the last call (and forgets them). */
export function takeStageStamps(): StageStamps {
  const stamps: StageStamps['stamps'] = [];
  for (const [key, [parsed, published, written]] of received) stamps.push([key, parsed, published, written]);
  received.clear();
  return { stamps };
}
