/**
 * Metric cells (src/metric-cells.ts) write into prom-client's own series: /metrics must read
 * exactly as if every update had gone through prom-client's `inc`/`observe`, including after a
 * reset, and the cells must actually take their fast path with this prom-client.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterCell, HistogramCell } from '../src/metric-cells.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];

function metrics() {
  const registry = new Registry();
  registry.setDefaultLabels({ device: 'till-1' });
  const registers = [registry];
  const counter = new Counter({
    name: 'c_total',
    help: 'c',
    labelNames: ['method', 'code'] as const,
    registers,
  });
  const histogram = new Histogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: ['method'] as const,
    buckets: BUCKETS,
    registers,
  });
  const plain = new Histogram({ name: 'p_seconds', help: 'p', buckets: BUCKETS, registers });
  return { registry, counter, histogram, plain };
}

// Below, at and between bounds, above the last one, and zero.
const VALUES = [0, 0.0005, 0.001, 0.005, 0.1, 0.7, 1, 3, 120];

describe('metric cells', () => {
  it('give the same /metrics text as prom-client updates', async () => {
    const a = metrics();
    const b = metrics();
    const get = new CounterCell(a.counter, { method: 'GET', code: '200' });
    const post = new CounterCell(a.counter, { method: 'POST', code: '202' });
    const time = new HistogramCell(a.histogram, { method: 'GET' }, BUCKETS);
    const plainTime = new HistogramCell(a.plain, {}, BUCKETS);
    for (const value of VALUES) {
      get.inc();
      post.inc();
      post.inc();
      time.observe(value);
      plainTime.observe(value);
      b.counter.inc({ method: 'GET', code: '200' });
      b.counter.inc({ method: 'POST', code: '202' });
      b.counter.inc({ method: 'POST', code: '202' });
      b.histogram.observe({ method: 'GET' }, value);
      b.plain.observe(value);
    }
    expect(await a.registry.metrics()).toBe(await b.registry.metrics());
    expect(await a.registry.metrics()).toContain('c_total{method="POST",code="202",device="till-1"} 18');
  });

  it("update prom-client's series in place after the first update (the fast path is taken)", async () => {
    const { registry, counter, histogram, plain } = metrics();
    const cell = new CounterCell(counter, { method: 'GET', code: '200' });
    const time = new HistogramCell(histogram, { method: 'GET' }, BUCKETS);
    // A series created before its cell (a zero series) and the one series of an unlabelled metric.
    counter.inc({ method: 'POST', code: '202' }, 0);
    const zeroed = new CounterCell(counter, { method: 'POST', code: '202' });
    const plainTime = new HistogramCell(plain, {}, BUCKETS);
    cell.inc();
    time.observe(0.5);
    zeroed.inc();
    plainTime.observe(0.5);
    // Count the calls that reach prom-client's own update methods from now on.
    let calls = 0;
    for (const [metric, method] of [
      [counter, 'inc'],
      [histogram, 'observe'],
      [plain, 'observe'],
    ] as const) {
      const target = metric as unknown as Record<string, (...args: unknown[]) => void>;
      const original = target[method]!.bind(metric);
      target[method] = (...args: unknown[]) => {
        calls += 1;
        original(...args);
      };
    }
    for (let i = 0; i < 10; i += 1) {
      cell.inc();
      time.observe(0.5);
      zeroed.inc();
      plainTime.observe(0.5);
    }
    expect(calls).toBe(0);
    const text = await registry.metrics();
    expect(text).toContain('c_total{method="POST",code="202",device="till-1"} 11');
    expect(text).toContain('p_seconds_count{device="till-1"} 11');
    expect(text).toContain('c_total{method="GET",code="200",device="till-1"} 11');
    expect(text).toContain('h_seconds_count{device="till-1",method="GET"} 11');
  });

  it('start again from zero after a reset, as prom-client does', async () => {
    const { registry, counter, histogram } = metrics();
    const cell = new CounterCell(counter, { method: 'GET', code: '200' });
    const time = new HistogramCell(histogram, { method: 'GET' }, BUCKETS);
    cell.inc();
    time.observe(0.5);
    registry.resetMetrics();
    cell.inc();
    time.observe(2);
    const text = await registry.metrics();
    expect(text).toContain('c_total{method="GET",code="200",device="till-1"} 1');
    expect(text).toContain('h_seconds_count{device="till-1",method="GET"} 1');
    expect(text).toContain('h_seconds_sum{device="till-1",method="GET"} 2');
  });

  it('a value that is not a finite number is refused as prom-client refuses it', () => {
    const { histogram } = metrics();
    const time = new HistogramCell(histogram, { method: 'GET' }, BUCKETS);
    time.observe(1);
    expect(() => time.observe(Number.NaN)).toThrow(TypeError);
  });
});
