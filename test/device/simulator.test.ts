/**
 * The built-in simulator (docs/simulator.md): lines, comments, case,
 * PRINT, SLEEP, FAIL, unknown commands, limits. Fiscal commands: simulator-fiscal.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatorExecutor } from '../../src/executors/simulator.ts';

const never = new AbortController().signal;

async function report(script: string, simulator = new SimulatorExecutor()): Promise<string> {
  const result = await simulator.execute(script, never);
  if (!result.ok) throw new Error(`expected FINISHED, got FAILURE: ${result.error}`);
  return result.report;
}

async function failure(script: string, simulator = new SimulatorExecutor()): Promise<string> {
  const result = await simulator.execute(script, never);
  if (result.ok) throw new Error(`expected FAILURE, got FINISHED: ${result.report}`);
  return result.error;
}

describe('simulator: PRINT, SLEEP, FAIL', () => {
  it('joins PRINT lines with \\n, no trailing newline; PRINT alone adds an empty line', async () => {
    expect(await report('PRINT hello\nPRINT\nPRINT world')).toBe('hello\n\nworld');
    expect(await report('PRINT   two leading spaces kept ')).toBe('  two leading spaces kept ');
    expect(await report('')).toBe('');
    expect(await report('PRINT a\n')).toBe('a');
  });

  it('accepts CR LF and LF, skips blank lines and # comments, ignores keyword case', async () => {
    const script =
      '# receipt header\r\n\r\n   \r\nprint a\r\n  # indented comment\r\n\tPrInT b\nPRINT #not a comment\r\n';
    expect(await report(script)).toBe('a\nb\n#not a comment');
  });

  it('SLEEP waits and produces nothing; its argument is checked before anything runs', async () => {
    expect(await report('PRINT before\nSLEEP 20\nsleep 0\nPRINT after')).toBe('before\nafter');
    expect(await failure('PRINT x\nSLEEP 60001')).toBe(
      'line 2: SLEEP needs a whole number of milliseconds from 0 to 60000, got "60001"',
    );
    expect(await failure('SLEEP -1')).toBe(
      'line 1: SLEEP needs a whole number of milliseconds from 0 to 60000, got "-1"',
    );
    expect(await failure('SLEEP 1.5')).toMatch(/^line 1: SLEEP needs .* got "1.5"$/);
    expect(await failure('SLEEP')).toMatch(/^line 1: SLEEP needs .* got ""$/);
  });

  it('SLEEP ends promptly with FAILURE when the signal aborts', async () => {
    const simulator = new SimulatorExecutor();
    const aborter = new AbortController();
    const running = simulator.execute('PRINT a\nSLEEP 60000\nPRINT b', aborter.signal);
    setTimeout(() => aborter.abort(new Error('service stopping')), 20);
    expect(await running).toEqual({ ok: false, error: 'line 2: aborted (service stopping)' });
    expect(await simulator.execute('PRINT x', aborter.signal)).toEqual({
      ok: false,
      error: 'line 1: aborted (service stopping)',
    });
  });

  it('ends a script running longer than its time limit', async () => {
    const simulator = new SimulatorExecutor({ timeoutMs: 50 });
    expect(await simulator.execute('SLEEP 10\nSLEEP 60000', never)).toEqual({
      ok: false,
      error: 'line 2: timed out after 50 ms',
    });
  });

  describe('scripts without SLEEP (no timer, no AbortController: the cheap path)', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });
    const prints = (n: number): string => Array.from({ length: n }, (_, i) => `PRINT ${i}`).join('\n');

    it('still stop between commands when the signal aborts while the script yields', async () => {
      const aborter = new AbortController();
      // Queued before the script's first yield (every 1000 commands), so it runs at that yield.
      setImmediate(() => aborter.abort(new Error('service stopping')));
      expect(await new SimulatorExecutor().execute(prints(3000), aborter.signal)).toEqual({
        ok: false,
        error: 'line 1001: aborted (service stopping)',
      });
    });

    it('still end at the time limit, checked when the script yields', async () => {
      let now = 1_000_000;
      // Each reading of the clock is 60 ms later: the limit has passed at the first yield.
      vi.spyOn(Date, 'now').mockImplementation(() => (now += 60));
      const simulator = new SimulatorExecutor({ timeoutMs: 50 });
      expect(await simulator.execute(prints(3000), never)).toEqual({
        ok: false,
        error: 'line 1001: timed out after 50 ms',
      });
      vi.restoreAllMocks();
      expect((await simulator.execute(prints(3), never)).ok).toBe(true);
    });
  });

  it('FAIL ends the task with exactly its message', async () => {
    expect(await failure('PRINT a\nFAIL paper jam: printer cover open\nPRINT b')).toBe(
      'paper jam: printer cover open',
    );
    expect(await failure('fail lower case')).toBe('lower case');
    expect(await failure('PRINT a\nFAIL')).toBe('line 2: FAIL (no message)');
  });

  it('names the line and the command of anything else, and runs nothing then', async () => {
    const simulator = new SimulatorExecutor();
    expect(await failure('PRINT a\n\nFOO bar', simulator)).toBe('line 3: unknown command "FOO"');
    expect(await failure('RECEIPT OPEN\r\nRECEIPT SHUT', simulator)).toBe(
      'line 2: unknown command "RECEIPT SHUT"',
    );
    expect(await failure('x', simulator)).toBe('line 1: unknown command "x"');
    expect(await failure('Z REPROT', simulator)).toBe('line 1: unknown command "Z REPROT"');
    expect(await failure('CASH DRAWER', simulator)).toBe('line 1: unknown command "CASH DRAWER"');
    expect(await failure(`${'A'.repeat(100)} x`, simulator)).toBe(
      `line 1: unknown command "${'A'.repeat(40)}..."`,
    );
    // Nothing ran: the RECEIPT OPEN on line 1 of the second script took no receipt number.
    expect(await report('COUNTERS', simulator)).toContain('LAST RECEIPT 0');
  });

  it('keeps the report within the output cap', async () => {
    const simulator = new SimulatorExecutor({ outputCap: 10 });
    expect(await report('PRINT 12345\nPRINT 67890\nPRINT more', simulator)).toBe('12345\n6789');
    expect(await report('PRINT ééééé', simulator)).toBe('ééééé');
    expect(await report('PRINT éééééé', simulator)).toBe('ééééé');
  });

  it('runs a long script and gives the event loop turns meanwhile', async () => {
    const script = Array.from({ length: 5000 }, (_, index) => `PRINT ${index}`).join('\n');
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 0);
    const result = await report(script);
    clearInterval(timer);
    expect(result.split('\n')).toHaveLength(5000);
    expect(result.endsWith('\n4999')).toBe(true);
    expect(ticks).toBeGreaterThan(0);
  });
});
