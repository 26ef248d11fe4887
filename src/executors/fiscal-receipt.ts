/**
 * One receipt of the simulated cash register, from RECEIPT OPEN to RECEIPT CLOSE or CANCEL
 * (docs/simulator.md). A receipt lives inside one script; the register's counters only change
 * when it closes, so an abandoned receipt never leaves half-counted amounts behind.
 */
import {
  formatMoney,
  formatPercent,
  formatQuantity,
  formatRate,
  parseMoney,
  parsePercent,
  parseQuantity,
  parseVatGroup,
  ScriptError,
  VAT_GROUPS,
  VAT_RATES,
  type VatGroup,
  vatIncluded,
} from './fiscal-format.ts';

export type ReceiptKind = 'SALE' | 'REFUND';

const MAX_NAME_LENGTH = 64;

interface Item {
  readonly group: VatGroup;
  readonly amount: bigint;
  discount: bigint;
}

export interface GroupTotal {
  readonly gross: bigint;
  readonly vat: bigint;
}

/** What a closed receipt adds to the register's counters. */
export interface ReceiptTotals {
  readonly kind: ReceiptKind;
  readonly total: bigint;
  readonly groups: ReadonlyMap<VatGroup, GroupTotal>;
  readonly cash: bigint;
  readonly card: bigint;
  /** Cash handed back on a sale; always 0 on a refund (refunds cannot be overpaid). */
  readonly change: bigint;
}

export class Receipt {
  private readonly items: Item[] = [];
  private cash = 0n;
  private card = 0n;

  constructor(
    readonly number: number,
    readonly kind: ReceiptKind,
    /** The script line of RECEIPT OPEN, named when the receipt is left open. */
    readonly openedAtLine: number,
  ) {}

  get total(): bigint {
    return this.items.reduce((sum, item) => sum + item.amount - item.discount, 0n);
  }

  /** Cash paid out on this refund so far (the drawer must hold it). */
  get refundCash(): bigint {
    return this.kind === 'REFUND' ? this.cash : 0n;
  }

  private get due(): bigint {
    const due = this.total - this.cash - this.card;
    return due > 0n ? due : 0n;
  }

  private assertNoPayment(command: string): void {
    if (this.cash + this.card > 0n) throw new ScriptError(`${command}: the receipt already has a payment`);
  }

  /** `ITEM "<name>" <quantity> <unit price> <VAT group>`. */
  item(args: string[]): string {
    if (args.length !== 4) throw new ScriptError('usage: ITEM "<name>" <quantity> <unit price> <VAT group>');
    const [name, quantityText, priceText, groupText] = args as [string, string, string, string];
    if (name.trim() === '') throw new ScriptError('ITEM: the name must not be empty');
    if (name.length > MAX_NAME_LENGTH)
      throw new ScriptError(`ITEM: the name is longer than ${MAX_NAME_LENGTH} characters`);
    const quantity = parseQuantity(quantityText);
    if (quantity === undefined) {
      throw new ScriptError(`ITEM: bad quantity "${quantityText}" (a number above 0, at most 3 decimals)`);
    }
    const price = parseMoney(priceText);
    if (price === undefined)
      throw new ScriptError(`ITEM: bad unit price "${priceText}" (an amount like 1.25)`);
    const group = parseVatGroup(groupText);
    if (group === undefined) throw new ScriptError(`ITEM: unknown VAT group "${groupText}" (A, B, C or D)`);
    this.assertNoPayment('ITEM');
    // Quantity is in thousandths: the line amount is rounded to the cent once, here.
    const amount = (quantity * price + 500n) / 1000n;
    this.items.push({ group, amount, discount: 0n });
    return `${name} ${formatQuantity(quantity)} x ${formatMoney(price)} = ${formatMoney(amount)} ${group}`;
  }

  /** `DISCOUNT <amount>` or `DISCOUNT <percent>%`, on the last item. */
  discount(args: string[]): string {
    const usage = 'usage: DISCOUNT <amount> or DISCOUNT <percent>%';
    if (args.length !== 1) throw new ScriptError(usage);
    const text = args[0]!;
    const percent = text.endsWith('%') ? parsePercent(text) : undefined;
    const fixed = text.endsWith('%') ? undefined : parseMoney(text);
    if (percent === undefined && fixed === undefined) {
      throw new ScriptError(`DISCOUNT: bad amount "${text}" (an amount like 0.50, or a percentage like 10%)`);
    }
    const item = this.items.at(-1);
    if (!item) throw new ScriptError('DISCOUNT: the receipt has no item yet');
    if (item.discount > 0n) throw new ScriptError('DISCOUNT: the last item already has a discount');
    this.assertNoPayment('DISCOUNT');
    const discount = percent !== undefined ? (item.amount * percent + 5_000n) / 10_000n : fixed!;
    if (discount <= 0n) throw new ScriptError('DISCOUNT: the discount must be above 0');
    if (discount > item.amount) {
      throw new ScriptError(
        `DISCOUNT: ${formatMoney(discount)} is more than the item's amount ${formatMoney(item.amount)}`,
      );
    }
    item.discount = discount;
    const label = percent !== undefined ? `DISCOUNT ${formatPercent(percent)}` : 'DISCOUNT';
    return `${label} ${formatMoney(-discount)}`;
  }

  subtotal(): string {
    return `SUBTOTAL ${formatMoney(this.total)}`;
  }

  /** `PAYMENT <CASH|CARD> <amount>`; `drawer` is the cash available for a refund. */
  payment(args: string[], drawer: bigint): string {
    if (args.length !== 2) throw new ScriptError('usage: PAYMENT <CASH|CARD> <amount>');
    const method = args[0]!.toUpperCase();
    if (method !== 'CASH' && method !== 'CARD') {
      throw new ScriptError(`PAYMENT: unknown method "${args[0]}" (CASH or CARD)`);
    }
    const amount = parseMoney(args[1]!);
    if (amount === undefined) throw new ScriptError(`PAYMENT: bad amount "${args[1]}" (an amount like 5.00)`);
    if (amount === 0n) throw new ScriptError('PAYMENT: the amount must be above 0');
    if (this.items.length === 0) throw new ScriptError('PAYMENT: the receipt has no item yet');
    const due = this.due;
    if (due === 0n) throw new ScriptError(`PAYMENT: receipt ${this.number} is already paid`);
    // Only cash on a sale can exceed the amount due: the difference is handed back as change.
    if (amount > due && (method === 'CARD' || this.kind === 'REFUND')) {
      const what = this.kind === 'REFUND' ? 'a refund' : 'a card payment';
      throw new ScriptError(
        `PAYMENT: ${what} of ${formatMoney(amount)} is more than the amount due ${formatMoney(due)}`,
      );
    }
    if (this.kind === 'REFUND' && method === 'CASH' && this.cash + amount > drawer) {
      throw new ScriptError(
        `PAYMENT: the drawer holds only ${formatMoney(drawer - this.cash)} cash for this refund`,
      );
    }
    if (method === 'CASH') this.cash += amount;
    else this.card += amount;
    return `PAYMENT ${method} ${formatMoney(amount)}`;
  }

  /** Checks the receipt can close and computes what it adds to the counters. */
  totals(): ReceiptTotals {
    if (this.items.length === 0) {
      throw new ScriptError(`RECEIPT CLOSE: receipt ${this.number} has no item (use RECEIPT CANCEL)`);
    }
    const total = this.total;
    const paid = this.cash + this.card;
    if (paid < total) {
      throw new ScriptError(
        `RECEIPT CLOSE: receipt ${this.number} is not paid: total ${formatMoney(total)}, paid ${formatMoney(paid)}, due ${formatMoney(total - paid)}`,
      );
    }
    const gross = new Map<VatGroup, bigint>();
    for (const item of this.items)
      gross.set(item.group, (gross.get(item.group) ?? 0n) + item.amount - item.discount);
    const groups = new Map<VatGroup, GroupTotal>();
    // VAT is computed once per group and receipt, on the group's gross total (docs/simulator.md).
    for (const group of VAT_GROUPS) {
      const amount = gross.get(group);
      if (amount !== undefined)
        groups.set(group, { gross: amount, vat: vatIncluded(amount, VAT_RATES[group]) });
    }
    return { kind: this.kind, total, groups, cash: this.cash, card: this.card, change: paid - total };
  }

  /** The lines RECEIPT CLOSE prints. */
  static closingLines(number: number, totals: ReceiptTotals): string[] {
    const lines = [`TOTAL ${formatMoney(totals.total)}`];
    for (const [group, { gross, vat }] of totals.groups) lines.push(vatLine(group, gross, vat));
    if (totals.card > 0n) lines.push(`CARD ${formatMoney(totals.card)}`);
    if (totals.cash > 0n) lines.push(`CASH ${formatMoney(totals.cash)}`);
    if (totals.kind === 'SALE' && totals.cash > 0n) lines.push(`CHANGE ${formatMoney(totals.change)}`);
    lines.push(`RECEIPT ${number} CLOSED`);
    return lines;
  }
}

/** `VAT A 20.00% ON 2.50 = 0.42`: gross amount of the group and the VAT it contains. */
export function vatLine(group: VatGroup, gross: bigint, vat: bigint): string {
  return `VAT ${group} ${formatRate(VAT_RATES[group])} ON ${formatMoney(gross)} = ${formatMoney(vat)}`;
}
