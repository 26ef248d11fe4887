/**
 * The fleets of the scale scenarios (fanout-scale.ts, status-under-load.ts): a broker (the store
 * broker aedes in a process of its own, a private mosquitto or a private nats-server), register
 * hosts (workers/scale-host.ts, full or light registers) and a controller in a process of its own
 * (workers/scale-controller.ts), so the controller's CPU and RSS are measured apart from everything
 * else. Start-up is timed apart from the fan-out figures.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ranges } from './fleet.ts';
import { startBenchMosquitto } from './mosquitto.ts';
import { type JetStreamCounts, jetStreamCounts, startBenchNats } from './nats.ts';
import { startWorker, type Worker, type WorkerMessage } from './proc.ts';
import { sleep } from './scenario.ts';

export type ScaleBroker = 'aedes' | 'mosquitto' | 'nats';

/** What workers/scale-controller.ts answers to one fan-out. */
export interface FanoutRun extends WorkerMessage {
  ms: number;
  finished: number;
  other: string;
  cpuUserMs: number;
  cpuSystemMs: number;
  rss: number;
  rssPeak: number;
  heapUsed: number;
  elu: number;
  received: number;
  missed: unknown[];
  stamps?: Array<[string, number, number]>;
  /** CPU time of the register hosts together and of the broker process during the fan-out, ms. */
  hostsCpuMs: number;
  brokerCpuMs: number;
  /** read/write system calls of the register hosts together and of the broker during the fan-out. */
  hostsSyscalls: Syscalls;
  brokerSyscalls: Syscalls;
}

export interface Syscalls {
  reads: number;
  writes: number;
}

export interface ScaleFleet {
  controller: Worker;
  hosts: Worker[];
  brokerPid: number | undefined;
  /** The store broker's process (aedes only; it answers profile-start/profile-stop). */
  brokerWorker: Worker | undefined;
  /** Wall time from starting the hosts to the controller seeing every register online. */
  startupMs: number;
  /** Sum of the hosts' RSS once started, bytes. */
  hostsRss: number;
  /** The broker process's RSS now, bytes (NaN where /proc is not there). */
  brokerRss(): number;
  /** nats-server only: its JetStream counts (consumers above all), from its monitoring port. */
  jetStream(): Promise<JetStreamCounts | undefined>;
  fanout(script: string, deadlineMs: number, stamp?: boolean): Promise<FanoutRun>;
  /** Runs `body` with the controller and every host profiled (files in `dir`, see window-profile.ts). */
  profiled<T>(dir: string, label: string, body: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

/** syscr and syscw of /proc/<pid>/io (proc(5)): read and write system calls so far; NaN if unreadable. */
function procSyscalls(pid: number | undefined): Syscalls {
  if (pid === undefined) return { reads: Number.NaN, writes: Number.NaN };
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string): number =>
      Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
    return { reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { reads: Number.NaN, writes: Number.NaN };
  }
}

function sumSyscalls(pids: Array<number | undefined>): Syscalls {
  return pids
    .map(procSyscalls)
    .reduce((a, b) => ({ reads: a.reads + b.reads, writes: a.writes + b.writes }), {
      reads: 0,
      writes: 0,
    });
}

const minus = (a: Syscalls, b: Syscalls): Syscalls => ({
  reads: a.reads - b.reads,
  writes: a.writes - b.writes,
});

/** CPU time (user + system) of a process from /proc, ms; NaN where /proc is not there. */
export function procCpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of proc(5), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Resident set size of a process from /proc, bytes; NaN where /proc is not there. */
export function procRss(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * How long the register hosts may take to start and connect, 300 s unless BENCH_FLEET_READY_S
 * says otherwise: on a machine shared at load 20-40, 10,000 registers subscribing through
 * nats-server took longer than that (docs/decisions/which-nats-server.md).
 */
function readyMs(): number {
  const value = process.env.BENCH_FLEET_READY_S;
  if (value === undefined || value === '') return 300_000;
  const seconds = Number(value);
  if (!(seconds > 0))
    throw new Error(`BENCH_FLEET_READY_S: expected seconds > 0, got ${JSON.stringify(value)}`);
  return seconds * 1000;
}

/** The bridges sweep their stale status topics for about a second after connecting. */
const SETTLE_MS = 2000;

async function startBroker(
  kind: ScaleBroker,
  registers: number,
): Promise<{
  port: number;
  pid: number | undefined;
  monitorPort?: number | undefined;
  worker?: Worker;
  stop: () => Promise<void>;
}> {
  if (kind === 'mosquitto') return await startBenchMosquitto();
  if (kind === 'nats') return await startBenchNats();
  const broker = startWorker('bench/workers/broker.ts', [String(registers)]);
  try {
    const ready = await broker.next<WorkerMessage & { port: number }>('ready', 30_000);
    return { port: ready.port, pid: broker.pid, worker: broker, stop: () => broker.stop(10_000) };
  } catch (error) {
    await broker.stop(1000);
    throw error;
  }
}

export async function startScaleFleet(options: {
  broker: ScaleBroker;
  registers: number;
  mode: 'full' | 'light';
  hosts: number;
  /** Hosts stamp every task end (status-under-load.ts). */
  stamp?: boolean;
  controllerExecArgv?: string[];
  /** Called every `progressMs` while the fleet starts (how far a slow broker has got). */
  onProgress?: (line: string) => void;
  progressMs?: number;
}): Promise<ScaleFleet> {
  const hostsReadyMs = readyMs();
  const broker = await startBroker(options.broker, options.registers);
  const jetStream = async (): Promise<JetStreamCounts | undefined> =>
    broker.monitorPort === undefined ? undefined : await jetStreamCounts(broker.monitorPort);
  // The store broker checks users (lib/fleet.ts's); mosquitto and nats-server run without.
  const auth = options.broker === 'aedes' ? 'users' : 'anonymous';
  const hosts: Worker[] = [];
  let controller: Worker | undefined;
  const stop = async (): Promise<void> => {
    await controller?.stop(20_000);
    await Promise.all(hosts.map((h) => h.stop(60_000)));
    await broker.stop();
  };
  try {
    const started = performance.now();
    for (const [from, to] of ranges(options.registers, options.hosts)) {
      const args = [options.mode, String(from), String(to), '127.0.0.1', String(broker.port), auth];
      if (options.stamp) args.push('stamp');
      hosts.push(startWorker('bench/workers/scale-host.ts', args));
    }
    const progress = setInterval(() => {
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      const rss = (procRss(broker.pid) / 2 ** 20).toFixed(0);
      const cpu = (procCpuMs(broker.pid) / 1000).toFixed(1);
      void jetStream()
        .then((js) => {
          const counts = js ? `, JetStream consumers ${js.consumers}, messages ${js.messages}` : '';
          options.onProgress?.(`starting for ${seconds} s: broker RSS ${rss} MiB, CPU ${cpu} s${counts}`);
        })
        .catch(() => options.onProgress?.(`starting for ${seconds} s: broker not answering /jsz`));
    }, options.progressMs ?? 10_000);
    let ready: Array<WorkerMessage & { rss: number }>;
    try {
      ready = await Promise.all(
        hosts.map((h) => h.next<WorkerMessage & { rss: number }>('ready', hostsReadyMs)),
      );
    } finally {
      clearInterval(progress);
    }
    const c = startWorker(
      'bench/workers/scale-controller.ts',
      [String(broker.port), String(options.registers), auth],
      { execArgv: options.controllerExecArgv ?? [] },
    );
    controller = c;
    await c.next('ready', 900_000);
    const startupMs = performance.now() - started;
    await sleep(SETTLE_MS);
    return {
      controller: c,
      hosts,
      brokerPid: broker.pid,
      brokerWorker: broker.worker,
      startupMs,
      hostsRss: ready.reduce((n, r) => n + r.rss, 0),
      brokerRss: () => procRss(broker.pid),
      jetStream,
      async fanout(script, deadlineMs, stamp = false) {
        const hostsCpu = (): number => hosts.reduce((n, h) => n + procCpuMs(h.pid), 0);
        const hostPids = hosts.map((h) => h.pid);
        const [hosts0, broker0] = [hostsCpu(), procCpuMs(broker.pid)];
        const [hostsIo0, brokerIo0] = [sumSyscalls(hostPids), procSyscalls(broker.pid)];
        c.send({ type: 'fanout', script, deadlineMs, stamp });
        const run = await c.next<FanoutRun>('fanned', deadlineMs + 60_000);
        return {
          ...run,
          hostsCpuMs: hostsCpu() - hosts0,
          brokerCpuMs: procCpuMs(broker.pid) - broker0,
          hostsSyscalls: minus(sumSyscalls(hostPids), hostsIo0),
          brokerSyscalls: minus(procSyscalls(broker.pid), brokerIo0),
        };
      },
      async profiled(dir, label, body) {
        const all = [c, ...hosts];
        for (const w of all) w.send({ type: 'profile-start' });
        await Promise.all(all.map((w) => w.next('profiling', 10_000)));
        try {
          return await body();
        } finally {
          for (const [i, w] of all.entries()) {
            const name = i === 0 ? 'controller' : `host${i}`;
            w.send({ type: 'profile-stop', file: join(dir, `${label}-${name}.cpuprofile`) });
          }
          await Promise.all(all.map((w) => w.next('profiled', 30_000)));
        }
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** min / median / max of a series, for the notes. */
export function spread(values: readonly number[]): { min: number; median: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    min: sorted[0] ?? Number.NaN,
    median: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}
