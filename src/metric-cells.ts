/**
 * One series of a prom-client Counter or Histogram (fixed label values), updated in place.
 *
 * Why: prom-client validates and hashes the label values on every `inc`/`observe`, also through
 * `labels()` children, and the REST path updated six labelled series per request (some 3-5 µs
 * of a 50 µs request on the bench machine: docs/benchmarks.md, "Issue 14", point 1). A cell does
 * the first update through prom-client, which creates the series, then finds that series' entry
 * (the one holding this cell's own labels object) and adds to it directly: what prom-client
 * would have added, so /metrics reads exactly as before. If the entry is gone (the metric was
 * reset or removed) or does not look as expected (another prom-client), the update goes through
 * prom-client again; test/metric-cells.test.ts compares both ways' output.
 */
import type { Counter, Histogram, LabelValues } from 'prom-client';

interface Entry {
  labels: unknown;
  value?: number;
  sum?: number;
  count?: number;
  bucketValues?: Record<string, number>;
}

/** prom-client's series table of a metric: label hash -> entry. */
function seriesOf(metric: Counter<string> | Histogram<string>): Record<string, Entry> | undefined {
  return (metric as unknown as { hashMap?: Record<string, Entry> }).hashMap;
}

/** Whether prom-client's entry labels are these label values (the series prom-client hashed them to). */
function sameLabels(entryLabels: unknown, labels: LabelValues<string>): boolean {
  if (entryLabels === labels) return true;
  if (typeof entryLabels !== 'object' || entryLabels === null) return false;
  const theirs = entryLabels as Record<string, unknown>;
  const names = Object.keys(labels);
  if (Object.keys(theirs).length !== names.length) return false;
  return names.every((name) => theirs[name] === labels[name]);
}

/**
 * The key of the series of these label values, if it has the expected shape. The series may
 * have been created before the cell (a zero series, so rate() works from the start).
 */
function findSeries(
  metric: Counter<string> | Histogram<string>,
  labels: LabelValues<string>,
  shape: (entry: Entry) => boolean,
): string | undefined {
  const series = seriesOf(metric);
  if (series === undefined) return undefined;
  for (const key of Object.keys(series)) {
    const entry = series[key]!;
    if (sameLabels(entry.labels, labels) && shape(entry)) return key;
  }
  return undefined;
}

const isCounterEntry = (entry: Entry): boolean => typeof entry.value === 'number';
const isHistogramEntry = (entry: Entry): boolean =>
  typeof entry.sum === 'number' && typeof entry.count === 'number' && typeof entry.bucketValues === 'object';

export class CounterCell {
  private key: string | undefined;
  private entry: Entry | undefined;

  /** `labels` must not change afterwards: prom-client keeps this very object. */
  constructor(
    private readonly counter: Counter<string>,
    private readonly labels: LabelValues<string>,
  ) {}

  inc(): void {
    const entry = this.entry;
    if (entry !== undefined && seriesOf(this.counter)?.[this.key!] === entry) {
      entry.value! += 1;
      return;
    }
    this.counter.inc(this.labels, 1);
    this.key = findSeries(this.counter, this.labels, isCounterEntry);
    this.entry = this.key === undefined ? undefined : seriesOf(this.counter)![this.key];
  }
}

export class HistogramCell {
  private key: string | undefined;
  private entry: Entry | undefined;
  private readonly bounds: readonly number[];
  /** The bounds as prom-client's bucket keys: a number key would be converted on every use. */
  private readonly boundKeys: readonly string[];

  /** `buckets`: the histogram's upper bounds, as it was created with them (ascending). */
  constructor(
    private readonly histogram: Histogram<string>,
    private readonly labels: LabelValues<string>,
    buckets: readonly number[],
  ) {
    this.bounds = [...buckets];
    this.boundKeys = buckets.map(String);
  }

  observe(value: number): void {
    const entry = this.entry;
    if (entry !== undefined && Number.isFinite(value) && seriesOf(this.histogram)?.[this.key!] === entry) {
      entry.sum! += value;
      entry.count! += 1;
      // prom-client counts a value in the first bucket whose bound is >= it; above all bounds,
      // only in +Inf (which is the count).
      const bounds = this.bounds;
      for (let i = 0; i < bounds.length; i += 1) {
        if (value <= bounds[i]!) {
          entry.bucketValues![this.boundKeys[i]!]! += 1;
          break;
        }
      }
      return;
    }
    this.histogram.observe(this.labels, value);
    this.key = findSeries(this.histogram, this.labels, isHistogramEntry);
    this.entry = this.key === undefined ? undefined : seriesOf(this.histogram)![this.key];
  }
}
