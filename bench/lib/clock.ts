/**
 * Clock offset between this process and a worker, so timestamps taken in two processes
 * (performance.timeOrigin + performance.now()) can be subtracted. NTP-style: the worker stamps a
 * ping, and the offset is the worker's stamp minus the midpoint of the round trip; the sample with
 * the shortest round trip wins. The residual error is at most half that round trip (tens of µs
 * over IPC on loopback).
 */
import type { Worker, WorkerMessage } from './proc.ts';
import { nowMs } from './scenario.ts';

export interface ClockOffset {
  /** Worker clock minus our clock, ms. */
  offsetMs: number;
  /** Round trip of the best sample, ms: the bound on the offset's error is half of it. */
  rttMs: number;
}

export async function measureOffset(worker: Worker, samples = 40): Promise<ClockOffset> {
  let best: ClockOffset | undefined;
  for (let i = 0; i < samples; i += 1) {
    const t0 = nowMs();
    worker.send({ type: 'ping', t0 });
    const pong = await worker.next<WorkerMessage & { t1: number }>('pong', 5000);
    const t2 = nowMs();
    const rtt = t2 - t0;
    if (!best || rtt < best.rttMs) best = { offsetMs: pong.t1 - (t0 + t2) / 2, rttMs: rtt };
  }
  return best!;
}
