/**
 * The simulator's fiscal commands (docs/simulator.md): exact receipts, X/Z reports, counters
 * across scripts, and every error. The examples in docs/simulator.md are copied from here.
 */
import { describe, expect, it } from 'vitest';
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

const lines = (...text: string[]): string => text.join('\n');

describe('simulator: fiscal receipts', () => {
  it('prints a sale with a discount, card and cash payments and change', async () => {
    const script = lines(
      'RECEIPT OPEN',
      'ITEM "Bread" 2 1.25 A',
      'ITEM "Milk 1L" 1 0.99 B',
      'DISCOUNT 10%',
      'SUBTOTAL',
      'PAYMENT CARD 1.00',
      'PAYMENT CASH 5.00',
      'RECEIPT CLOSE',
    );
    expect(await report(script)).toBe(
      lines(
        'RECEIPT 1 SALE',
        'Bread 2 x 1.25 = 2.50 A',
        'Milk 1L 1 x 0.99 = 0.99 B',
        'DISCOUNT 10% -0.10',
        'SUBTOTAL 3.39',
        'PAYMENT CARD 1.00',
        'PAYMENT CASH 5.00',
        'TOTAL 3.39',
        'VAT A 20.00% ON 2.50 = 0.42',
        'VAT B 10.00% ON 0.89 = 0.08',
        'CARD 1.00',
        'CASH 5.00',
        'CHANGE 2.61',
        'RECEIPT 1 CLOSED',
      ),
    );
  });

  it('computes in exact cents: quantities, fixed discounts, many items', async () => {
    const script = lines(
      'receipt open sale',
      'item "Cheese, 0.35 kg" 0.35 12.90 c',
      'item Apples 1.255 2.39 C',
      'discount 0.05',
      'ITEM "Coffee \\"Extra\\"" 3 0.10 D',
      'PAYMENT CASH 0.30',
      'PAYMENT CASH 10',
      'RECEIPT CLOSE',
    );
    expect(await report(script)).toBe(
      lines(
        'RECEIPT 1 SALE',
        'Cheese, 0.35 kg 0.35 x 12.90 = 4.52 C',
        'Apples 1.255 x 2.39 = 3.00 C',
        'DISCOUNT -0.05',
        'Coffee "Extra" 3 x 0.10 = 0.30 D',
        'PAYMENT CASH 0.30',
        'PAYMENT CASH 10.00',
        'TOTAL 7.77',
        'VAT C 5.00% ON 7.47 = 0.36',
        'VAT D 0.00% ON 0.30 = 0.00',
        'CASH 10.30',
        'CHANGE 2.53',
        'RECEIPT 1 CLOSED',
      ),
    );
  });

  it('pays a refund out of the drawer, and cancels receipts', async () => {
    const simulator = new SimulatorExecutor();
    const script = lines(
      'CASH IN 50.00',
      'RECEIPT OPEN REFUND',
      'ITEM "Milk 1L" 2 0.99 B',
      'PAYMENT CASH 1.98',
      'RECEIPT CLOSE',
      'RECEIPT OPEN',
      'ITEM "Bread" 1 1.25 A',
      'RECEIPT CANCEL',
    );
    expect(await report(script, simulator)).toBe(
      lines(
        'CASH IN 50.00',
        'DRAWER 50.00',
        'RECEIPT 1 REFUND',
        'Milk 1L 2 x 0.99 = 1.98 B',
        'PAYMENT CASH 1.98',
        'TOTAL 1.98',
        'VAT B 10.00% ON 1.98 = 0.18',
        'CASH 1.98',
        'RECEIPT 1 CLOSED',
        'RECEIPT 2 SALE',
        'Bread 1 x 1.25 = 1.25 A',
        'RECEIPT 2 CANCELLED',
      ),
    );
    expect(simulator.register.drawer).toBe(4802n);
    expect(simulator.register.daily).toMatchObject({
      refundReceipts: 1,
      refunds: 198n,
      cancelledReceipts: 1,
    });
  });

  it('keeps X report counters across scripts; Z prints, resets and numbers them', async () => {
    const simulator = new SimulatorExecutor();
    await report(
      'CASH IN 100\nRECEIPT OPEN\nITEM "Bread" 2 1.25 A\nPAYMENT CASH 5\nRECEIPT CLOSE',
      simulator,
    );
    await report(
      'RECEIPT OPEN\nITEM "Wine" 1 8.99 A\nITEM "Milk 1L" 1 0.99 B\nPAYMENT CARD 9.98\nRECEIPT CLOSE',
      simulator,
    );
    await report(
      'RECEIPT OPEN REFUND\nITEM "Milk 1L" 1 0.99 B\nPAYMENT CASH 0.99\nRECEIPT CLOSE\nCASH OUT 20',
      simulator,
    );
    const day = lines(
      'SALE RECEIPTS 2',
      'SALES 12.48',
      'REFUND RECEIPTS 1',
      'REFUNDS 0.99',
      'CANCELLED RECEIPTS 0',
      'NET 11.49',
      'VAT A 20.00% ON 11.49 = 1.92',
      'VAT B 10.00% ON 0.00 = 0.00',
      'VAT C 5.00% ON 0.00 = 0.00',
      'VAT D 0.00% ON 0.00 = 0.00',
      'CASH 1.51',
      'CARD 9.98',
      'CASH IN 100.00',
      'CASH OUT 20.00',
      'DRAWER 81.51',
    );
    expect(await report('X REPORT', simulator)).toBe(`X REPORT\nLAST Z 0\n${day}`);
    // X resets nothing.
    expect(await report('x report', simulator)).toBe(`X REPORT\nLAST Z 0\n${day}`);
    expect(await report('Z REPORT', simulator)).toBe(`Z REPORT 1\n${day}`);
    expect(await report('X REPORT', simulator)).toBe(
      lines(
        'X REPORT',
        'LAST Z 1',
        'SALE RECEIPTS 0',
        'SALES 0.00',
        'REFUND RECEIPTS 0',
        'REFUNDS 0.00',
        'CANCELLED RECEIPTS 0',
        'NET 0.00',
        'VAT A 20.00% ON 0.00 = 0.00',
        'VAT B 10.00% ON 0.00 = 0.00',
        'VAT C 5.00% ON 0.00 = 0.00',
        'VAT D 0.00% ON 0.00 = 0.00',
        'CASH 0.00',
        'CARD 0.00',
        'CASH IN 0.00',
        'CASH OUT 0.00',
        'DRAWER 81.51',
      ),
    );
    expect((await report('Z REPORT', simulator)).split('\n')[0]).toBe('Z REPORT 2');
    expect(await report('COUNTERS\nVAT', simulator)).toBe(
      lines(
        'COUNTERS',
        'LAST RECEIPT 3',
        'LAST Z 2',
        'GRAND TOTAL SALES 12.48',
        'GRAND TOTAL REFUNDS 0.99',
        'DRAWER 81.51',
        'VAT A 20.00%',
        'VAT B 10.00%',
        'VAT C 5.00%',
        'VAT D 0.00%',
      ),
    );
  });

  it('lets X REPORT and PRINT run inside a receipt, which counts only once closed', async () => {
    const simulator = new SimulatorExecutor();
    const result = await report(
      'RECEIPT OPEN\nITEM "Tea" 1 2.00 B\nX REPORT\nPRINT Thank you\nPAYMENT CARD 2\nRECEIPT CLOSE\nX REPORT',
      simulator,
    );
    const xReports = result.split('X REPORT\n').slice(1);
    expect(xReports[0]).toContain('SALE RECEIPTS 0\nSALES 0.00');
    expect(xReports[1]).toContain('SALE RECEIPTS 1\nSALES 2.00');
    expect(result).toContain('Thank you\nPAYMENT CARD 2.00');
  });
});

describe('simulator: fiscal errors', () => {
  const cases: Array<[string, string, string]> = [
    [
      'item without receipt',
      'ITEM "Bread" 1 1.25 A',
      'line 1: ITEM: no receipt is open (RECEIPT OPEN first)',
    ],
    [
      'two receipts',
      'RECEIPT OPEN\nRECEIPT OPEN',
      'line 2: RECEIPT OPEN: receipt 1 is open (line 1); close or cancel it first',
    ],
    ['bad kind', 'RECEIPT OPEN RETURN', 'line 1: usage: RECEIPT OPEN [SALE|REFUND]'],
    [
      'RECEIPT alone',
      'RECEIPT',
      'line 1: usage: RECEIPT OPEN [SALE|REFUND], RECEIPT CLOSE or RECEIPT CANCEL',
    ],
    [
      'item arguments',
      'RECEIPT OPEN\nITEM Bread 1 1.25',
      'line 2: usage: ITEM "<name>" <quantity> <unit price> <VAT group>',
    ],
    [
      'quantity',
      'RECEIPT OPEN\nITEM x 0 1 A',
      'line 2: ITEM: bad quantity "0" (a number above 0, at most 3 decimals)',
    ],
    [
      'quantity decimals',
      'RECEIPT OPEN\nITEM x 1.2345 1 A',
      'line 2: ITEM: bad quantity "1.2345" (a number above 0, at most 3 decimals)',
    ],
    ['price', 'RECEIPT OPEN\nITEM x 1 1,25 A', 'line 2: ITEM: bad unit price "1,25" (an amount like 1.25)'],
    [
      'negative price',
      'RECEIPT OPEN\nITEM x 1 -1 A',
      'line 2: ITEM: bad unit price "-1" (an amount like 1.25)',
    ],
    ['VAT group', 'RECEIPT OPEN\nITEM x 1 1 E', 'line 2: ITEM: unknown VAT group "E" (A, B, C or D)'],
    ['empty name', 'RECEIPT OPEN\nITEM "" 1 1 A', 'line 2: ITEM: the name must not be empty'],
    [
      'long name',
      `RECEIPT OPEN\nITEM ${'n'.repeat(65)} 1 1 A`,
      'line 2: ITEM: the name is longer than 64 characters',
    ],
    ['open quote', 'RECEIPT OPEN\nITEM "Bread 1 1 A', 'line 2: unterminated quote'],
    [
      'item after payment',
      'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CASH 1\nITEM y 1 1 A',
      'line 4: ITEM: the receipt already has a payment',
    ],
    ['discount first', 'RECEIPT OPEN\nDISCOUNT 1', 'line 2: DISCOUNT: the receipt has no item yet'],
    [
      'discount twice',
      'RECEIPT OPEN\nITEM x 1 1 A\nDISCOUNT 10%\nDISCOUNT 1%',
      'line 4: DISCOUNT: the last item already has a discount',
    ],
    [
      'discount too big',
      'RECEIPT OPEN\nITEM x 1 1 A\nDISCOUNT 1.01',
      "line 3: DISCOUNT: 1.01 is more than the item's amount 1.00",
    ],
    [
      'discount percent',
      'RECEIPT OPEN\nITEM x 1 1 A\nDISCOUNT 101%',
      'line 3: DISCOUNT: bad amount "101%" (an amount like 0.50, or a percentage like 10%)',
    ],
    [
      'discount zero',
      'RECEIPT OPEN\nITEM x 1 1 A\nDISCOUNT 0.00',
      'line 3: DISCOUNT: the discount must be above 0',
    ],
    [
      'payment method',
      'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CHEQUE 1',
      'line 3: PAYMENT: unknown method "CHEQUE" (CASH or CARD)',
    ],
    [
      'payment amount',
      'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CASH 0',
      'line 3: PAYMENT: the amount must be above 0',
    ],
    ['payment no item', 'RECEIPT OPEN\nPAYMENT CASH 1', 'line 2: PAYMENT: the receipt has no item yet'],
    [
      'card overpay',
      'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CARD 1.01',
      'line 3: PAYMENT: a card payment of 1.01 is more than the amount due 1.00',
    ],
    [
      'paid twice',
      'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CASH 2\nPAYMENT CASH 1',
      'line 4: PAYMENT: receipt 1 is already paid',
    ],
    [
      'refund overpay',
      'CASH IN 10\nRECEIPT OPEN REFUND\nITEM x 1 1 A\nPAYMENT CASH 2',
      'line 4: PAYMENT: a refund of 2.00 is more than the amount due 1.00',
    ],
    [
      'refund drawer',
      'RECEIPT OPEN REFUND\nITEM x 1 1 A\nPAYMENT CASH 1',
      'line 3: PAYMENT: the drawer holds only 0.00 cash for this refund',
    ],
    [
      'unpaid close',
      'RECEIPT OPEN\nITEM x 1 3.39 A\nPAYMENT CARD 1\nRECEIPT CLOSE',
      'line 4: RECEIPT CLOSE: receipt 1 is not paid: total 3.39, paid 1.00, due 2.39',
    ],
    [
      'empty close',
      'RECEIPT OPEN\nRECEIPT CLOSE',
      'line 2: RECEIPT CLOSE: receipt 1 has no item (use RECEIPT CANCEL)',
    ],
    ['close nothing', 'RECEIPT CLOSE', 'line 1: RECEIPT CLOSE: no receipt is open (RECEIPT OPEN first)'],
    ['close arguments', 'RECEIPT OPEN\nRECEIPT CLOSE now', 'line 2: RECEIPT CLOSE takes no arguments'],
    ['cash out', 'CASH IN 1\nCASH OUT 1.01', 'line 2: CASH OUT: the drawer holds only 1.00'],
    ['cash amount', 'CASH IN ten', 'line 1: CASH IN: bad amount "ten" (an amount like 100.00)'],
    [
      'cash in receipt',
      'RECEIPT OPEN\nCASH IN 5',
      'line 2: CASH IN: receipt 1 is open (line 1); close or cancel it first',
    ],
    [
      'Z in receipt',
      'RECEIPT OPEN\nZ REPORT',
      'line 2: Z REPORT: receipt 1 is open (line 1); close or cancel it first',
    ],
    ['report arguments', 'X REPORT all', 'line 1: X REPORT takes no arguments'],
    [
      'left open',
      'PRINT a\nRECEIPT OPEN\nITEM x 1 1 A',
      'line 2: receipt 1 was not closed by the end of the script; it has been cancelled',
    ],
  ];

  it.each(cases)('%s', async (_name, script, error) => {
    expect(await failure(script)).toBe(error);
  });

  it('cancels the open receipt of a failing script; closed receipts stay counted', async () => {
    const simulator = new SimulatorExecutor();
    expect(
      await failure(
        'RECEIPT OPEN\nITEM x 1 1 A\nPAYMENT CASH 1\nRECEIPT CLOSE\nRECEIPT OPEN\nITEM y 1 2 A\nFAIL out of paper',
        simulator,
      ),
    ).toBe('out of paper');
    expect(await failure('RECEIPT OPEN\nITEM z 1 1 A', simulator)).toMatch(
      /^line 1: receipt 3 was not closed/,
    );
    expect(simulator.register.daily).toMatchObject({ saleReceipts: 1, sales: 100n, cancelledReceipts: 2 });
    // The register is usable at once: no receipt is left open.
    expect(await report('RECEIPT OPEN\nITEM w 1 1 A\nPAYMENT CARD 1\nRECEIPT CLOSE', simulator)).toContain(
      'RECEIPT 4 CLOSED',
    );
  });

  it('cancels the open receipt when the service stops mid-script', async () => {
    const simulator = new SimulatorExecutor();
    const aborter = new AbortController();
    const running = simulator.execute(
      'RECEIPT OPEN\nITEM x 1 1 A\nSLEEP 60000\nRECEIPT CLOSE',
      aborter.signal,
    );
    setTimeout(() => aborter.abort(new Error('service stopping')), 20);
    expect(await running).toEqual({ ok: false, error: 'line 3: aborted (service stopping)' });
    expect(simulator.register.daily).toMatchObject({ saleReceipts: 0, cancelledReceipts: 1 });
    expect(simulator.register.lastReceipt).toBe(1);
  });
});
