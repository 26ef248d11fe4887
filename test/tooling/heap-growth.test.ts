/**
 * `serve --heap-growth` (docs/decisions/heap-growth.md): the real command in a child process, under V8's own trace of its heap limits.
 * A probe loaded with `--import` runs a full collection every 100 ms, and V8 prints the old
 * generation's next limit after each one with the growth factor it applied. Node 20's V8 prints
 * it at the end of its "Limit: ... (1.5)" line, and its "factor" line shows its own choice, which
 * the setting overrides (4.0 here); Node 22 and 24's print no factor on the "Limit" line and the
 * applied one on the "factor ... based on" line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { ConfigError } from '../../src/config.ts';
import {
  SERVE_ON_FREE_PORTS,
  serveBanner,
  startCli,
  stopAll,
  waitForPrinted,
} from '../support/cli-process.ts';

afterEach(stopAll);

const FORCED_GC = `data:text/javascript,setInterval(() => globalThis.gc(), 100).unref();`;
const NODE_ARGS = ['--expose-gc', '--trace-gc-verbose', `--import=${FORCED_GC}`];

/** The growth factors V8 applied in the full collections that followed the banner. */
async function factorsAfterStart(args: string[]): Promise<string[]> {
  const serve = startCli([...SERVE_ON_FREE_PORTS, ...args], {}, NODE_ARGS);
  await serveBanner(serve);
  const started = serve.stdout().length;
  const factors = (): string[] => {
    const trace = serve.stdout().slice(started);
    const limits = [...trace.matchAll(/\[HeapController\] Limit: .*\((\d+\.\d)\)$/gm)];
    const applied =
      limits.length > 0 ? limits : [...trace.matchAll(/\[HeapController\] factor (\d+\.\d) based on /gm)];
    return applied.map((m) => m[1]!);
  };
  await waitForPrinted(serve, () => factors().length >= 3, 'three full collections after the start');
  return factors();
}

describe('serve --heap-growth', () => {
  it('makes V8 grow the old generation by 50 % past its live size by default', async () => {
    const factors = await factorsAfterStart([]);
    expect(new Set(factors)).toEqual(new Set(['1.5']));
  });

  // What V8 chooses itself (with --heap-growth 0) depends on its measured speeds and can be any
  // factor, 1.5 included (seen on Node 24), so only a chosen percentage is asserted here.
  it('takes another percentage', async () => {
    expect(new Set(await factorsAfterStart(['--heap-growth', '250']))).toEqual(new Set(['3.5']));
  });

  it('refuses what is not 0 or 10-300 with a clear message', () => {
    for (const [value, message] of [
      ['5', 'expected 0 (V8 chooses) or 10-300, got 5'],
      ['301', 'expected between 0 and 300, got 301'],
      ['half', 'expected a whole number, got "half"'],
    ] as const) {
      let caught: unknown;
      try {
        parseServeConfig({ heapGrowth: value });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).problems.join('\n')).toContain('--heap-growth');
      expect((caught as ConfigError).problems.join('\n')).toContain(message);
    }
  });
});
