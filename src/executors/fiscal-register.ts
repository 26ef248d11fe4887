/**
 * The simulated cash register's memory: daily counters (since the last Z report) and lifetime
 * counters, for the life of the process (docs/simulator.md; nothing is persisted). Scripts
 * talk to it through a FiscalSession (fiscal-session.ts), one per script.
 */
import { formatMoney, formatRate, VAT_GROUPS, VAT_RATES, type VatGroup } from './fiscal-format.ts';
import { Receipt, type ReceiptKind, type ReceiptTotals, vatLine } from './fiscal-receipt.ts';

/** Counters since the last Z report. Amounts in cents; refunds count negative in groups and takings. */
export interface DayCounters {
  saleReceipts: number;
  sales: bigint;
  refundReceipts: number;
  refunds: bigint;
  cancelledReceipts: number;
  groups: Record<VatGroup, { gross: bigint; vat: bigint }>;
  /** Cash taken for sales (less change) minus cash paid out for refunds. */
  cash: bigint;
  card: bigint;
  cashIn: bigint;
  cashOut: bigint;
}

function emptyDay(): DayCounters {
  const groups = {} as DayCounters['groups'];
  for (const group of VAT_GROUPS) groups[group] = { gross: 0n, vat: 0n };
  return {
    saleReceipts: 0,
    sales: 0n,
    refundReceipts: 0,
    refunds: 0n,
    cancelledReceipts: 0,
    groups,
    cash: 0n,
    card: 0n,
    cashIn: 0n,
    cashOut: 0n,
  };
}

export class FiscalRegister {
  /** Number of the last receipt opened (closed or cancelled); never reset. */
  private lastReceiptNumber = 0;
  /** Number of the last Z report; never reset. */
  private lastZNumber = 0;
  private grandSales = 0n;
  private grandRefunds = 0n;
  /** Cash in the drawer; Z reports do not empty it (take it out with CASH OUT). */
  private drawerCash = 0n;
  private day = emptyDay();

  get drawer(): bigint {
    return this.drawerCash;
  }

  get lastReceipt(): number {
    return this.lastReceiptNumber;
  }

  get lastZ(): number {
    return this.lastZNumber;
  }

  /** A copy of the counters since the last Z report. */
  get daily(): DayCounters {
    return structuredClone(this.day);
  }

  openReceipt(kind: ReceiptKind, line: number): Receipt {
    this.lastReceiptNumber += 1;
    return new Receipt(this.lastReceiptNumber, kind, line);
  }

  /** Adds a closed receipt to the counters, all at once. */
  commit(totals: ReceiptTotals): void {
    const day = this.day;
    const sign = totals.kind === 'SALE' ? 1n : -1n;
    for (const [group, { gross, vat }] of totals.groups) {
      day.groups[group].gross += sign * gross;
      day.groups[group].vat += sign * vat;
    }
    const cash = sign * (totals.cash - totals.change);
    day.cash += cash;
    day.card += sign * totals.card;
    this.drawerCash += cash;
    if (totals.kind === 'SALE') {
      day.saleReceipts += 1;
      day.sales += totals.total;
      this.grandSales += totals.total;
    } else {
      day.refundReceipts += 1;
      day.refunds += totals.total;
      this.grandRefunds += totals.total;
    }
  }

  cancel(): void {
    this.day.cancelledReceipts += 1;
  }

  cashIn(amount: bigint): void {
    this.day.cashIn += amount;
    this.drawerCash += amount;
  }

  /** Caller checks `amount <= drawer`. */
  cashOut(amount: bigint): void {
    this.day.cashOut += amount;
    this.drawerCash -= amount;
  }

  private dayLines(): string[] {
    const day = this.day;
    return [
      `SALE RECEIPTS ${day.saleReceipts}`,
      `SALES ${formatMoney(day.sales)}`,
      `REFUND RECEIPTS ${day.refundReceipts}`,
      `REFUNDS ${formatMoney(day.refunds)}`,
      `CANCELLED RECEIPTS ${day.cancelledReceipts}`,
      `NET ${formatMoney(day.sales - day.refunds)}`,
      ...VAT_GROUPS.map((group) => vatLine(group, day.groups[group].gross, day.groups[group].vat)),
      `CASH ${formatMoney(day.cash)}`,
      `CARD ${formatMoney(day.card)}`,
      `CASH IN ${formatMoney(day.cashIn)}`,
      `CASH OUT ${formatMoney(day.cashOut)}`,
      `DRAWER ${formatMoney(this.drawerCash)}`,
    ];
  }

  /** X report: the daily counters, nothing reset. */
  xReport(): string[] {
    return ['X REPORT', `LAST Z ${this.lastZNumber}`, ...this.dayLines()];
  }

  /** Z report: the daily counters, then they are reset and the Z number grows by one. */
  zReport(): string[] {
    const lines = [`Z REPORT ${this.lastZNumber + 1}`, ...this.dayLines()];
    this.lastZNumber += 1;
    this.day = emptyDay();
    return lines;
  }

  /** Lifetime counters (process life). */
  counters(): string[] {
    return [
      'COUNTERS',
      `LAST RECEIPT ${this.lastReceiptNumber}`,
      `LAST Z ${this.lastZNumber}`,
      `GRAND TOTAL SALES ${formatMoney(this.grandSales)}`,
      `GRAND TOTAL REFUNDS ${formatMoney(this.grandRefunds)}`,
      `DRAWER ${formatMoney(this.drawerCash)}`,
    ];
  }

  vatTable(): string[] {
    return VAT_GROUPS.map((group) => `VAT ${group} ${formatRate(VAT_RATES[group])}`);
  }
}
