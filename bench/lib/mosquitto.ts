/**
 * The benchmarks' mosquitto (test/support/broker-programs.ts) with its queue limits raised above
 * mosquitto's defaults (20 in flight, 1000 queued per client): a controller of 500 registers
 * receives 1,500 QoS 1 status messages at once, and with the defaults mosquitto drops the excess;
 * an operator would set these for a store too. BENCH_MOSQUITTO_DEFAULTS=1 keeps mosquitto's own
 * limits, to see what they cost.
 */
import { type RunningProgramBroker, startMosquitto } from '../../test/support/broker-programs.ts';

export function startBenchMosquitto(): Promise<RunningProgramBroker> {
  return startMosquitto({
    config:
      process.env.BENCH_MOSQUITTO_DEFAULTS === '1'
        ? []
        : ['max_inflight_messages 1000', 'max_queued_messages 1000000'],
  });
}
