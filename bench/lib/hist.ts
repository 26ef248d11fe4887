/**
 * Latency histograms (hdr-histogram-js). Values are recorded in microseconds, so sub-millisecond
 * MQTT latencies keep their resolution, and read back in milliseconds.
 */
import * as hdr from 'hdr-histogram-js';

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
  mean: number;
}

export class Latencies {
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  /** Samples below zero (clock calibration error on loopback): clamped to 0, counted here. */
  negative = 0;

  recordMs(ms: number): void {
    if (ms < 0) this.negative += 1;
    this.histogram.recordValue(Math.max(0, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  summary(): LatencySummary {
    const h = this.histogram;
    const ms = (us: number): number => Math.round(us) / 1000;
    return {
      count: h.totalCount,
      p50: ms(h.getValueAtPercentile(50)),
      p90: ms(h.getValueAtPercentile(90)),
      p99: ms(h.getValueAtPercentile(99)),
      max: ms(h.maxValue),
      min: ms(h.minNonZeroValue === Number.MAX_SAFE_INTEGER ? 0 : h.minNonZeroValue),
      mean: ms(h.mean),
    };
  }
}
