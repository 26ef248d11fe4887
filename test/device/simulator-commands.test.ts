/**
 * The simulator's command table (src/executors/simulator-commands.ts): every example runs on a
 * real simulator as written, the parser knows exactly the table's command words, and the table
 * is what the controller serves the dashboard (GET /api/simulator/commands).
 */
import { describe, expect, it } from 'vitest';
import { SimulatorExecutor } from '../../src/executors/simulator.ts';
import { commandUsage, SIMULATOR_COMMANDS } from '../../src/executors/simulator-commands.ts';

async function run(script: string) {
  return new SimulatorExecutor().execute(script, new AbortController().signal);
}

/** What a command needs before it (an open receipt, a paid one, cash in the drawer) and after. */
function scene(command: string, example: string): string {
  const open = 'RECEIPT OPEN\nITEM "Bread" 2 1.25 A';
  switch (command) {
    case 'RECEIPT CLOSE':
      return `${open}\nPAYMENT CASH 5.00\n${example}`;
    case 'RECEIPT CANCEL':
      return `${open}\n${example}`;
    case 'CASH OUT':
      return `CASH IN 100.00\n${example}`;
    case 'RECEIPT OPEN':
      return `${example}\nRECEIPT CANCEL`;
    default:
      return SIMULATOR_COMMANDS.find((c) => c.command === command)!.needsReceipt
        ? `${open}\n${example}\nRECEIPT CANCEL`
        : example;
  }
}

describe('the simulator command table', () => {
  it.each(SIMULATOR_COMMANDS.map((c) => [c.command, c.example] as const))(
    '%s: its example runs as written',
    async (command, example) => {
      expect(example.toUpperCase().startsWith(command)).toBe(true);
      const result = await run(scene(command, example));
      if (command === 'FAIL') expect(result).toEqual({ ok: false, error: 'out of paper' });
      else expect(result).toMatchObject({ ok: true });
    },
  );

  it('the parser refuses what the old dashboard hint said (XREPORT), and every word not in the table', async () => {
    expect(await run('XREPORT')).toEqual({ ok: false, error: 'line 1: unknown command "XREPORT"' });
    expect(await run('X RAPPORT')).toEqual({ ok: false, error: 'line 1: unknown command "X RAPPORT"' });
    expect(await run('RECEIPT')).toEqual({
      ok: false,
      error: 'line 1: usage: RECEIPT OPEN [SALE|REFUND], RECEIPT CLOSE or RECEIPT CANCEL',
    });
    expect(await run('CASH')).toEqual({
      ok: false,
      error: 'line 1: usage: CASH IN <amount> or CASH OUT <amount>',
    });
  });

  it('usage lines show the argument shape', () => {
    const usage = Object.fromEntries(SIMULATOR_COMMANDS.map((c) => [c.command, commandUsage(c)]));
    expect(usage).toMatchObject({
      ITEM: 'ITEM <name> <quantity> <unit price> <VAT group>',
      PAYMENT: 'PAYMENT CASH|CARD <amount>',
      'RECEIPT OPEN': 'RECEIPT OPEN [SALE|REFUND]',
      'X REPORT': 'X REPORT',
      PRINT: 'PRINT [<text>]',
    });
  });
});
