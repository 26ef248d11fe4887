/**
 * The fiscal commands of one script (docs/simulator.md). A receipt never outlives the script
 * that opened it: a script that fails cancels its open receipt, and a script that ends with a
 * receipt still open fails, after cancelling it. The register's counters therefore only ever
 * hold closed receipts, whatever a script does.
 */
import { clip, formatMoney, parseMoney, ScriptError, splitWords } from './fiscal-format.ts';
import { Receipt } from './fiscal-receipt.ts';
import type { FiscalRegister } from './fiscal-register.ts';
import { commandUsage, SIMULATOR_COMMANDS, SIMULATOR_KEYWORDS } from './simulator-commands.ts';

export class FiscalSession {
  private receipt: Receipt | undefined;

  constructor(private readonly register: FiscalRegister) {}

  /**
   * Checked for every line before a script runs, so a typo runs nothing: the error for a word that
   * is not a fiscal command, else undefined.
   */
  static commandError(word: string, rest: string): string | undefined {
    const keyword = word.toUpperCase();
    const second = rest.trim().split(/\s+/, 1)[0] ?? '';
    const unknown = `unknown command "${clip(second ? `${word} ${second}` : word)}"`;
    // The command table is the one list of command words (simulator-commands.ts).
    const seconds = SIMULATOR_KEYWORDS.get(keyword);
    if (!seconds) return `unknown command "${clip(word)}"`;
    if (seconds.size === 0 || seconds.has(second.toUpperCase())) return undefined;
    // RECEIPT and CASH alone: how they are written; `X` alone is just an unknown word.
    if (second || seconds.size === 1) return unknown;
    const forms = SIMULATOR_COMMANDS.filter((c) => c.command.startsWith(`${keyword} `)).map(commandUsage);
    return `usage: ${forms.slice(0, -1).join(', ')} or ${forms.at(-1)}`;
  }

  /** Runs one fiscal command; `keyword` is upper case, `rest` the text after it. */
  run(keyword: string, rest: string, line: number): string[] {
    const args = splitWords(rest);
    switch (keyword) {
      case 'RECEIPT':
        return this.receiptCommand(args, line);
      case 'ITEM':
        return [this.openReceipt('ITEM').item(args)];
      case 'DISCOUNT':
        return [this.openReceipt('DISCOUNT').discount(args)];
      case 'SUBTOTAL':
        noArguments('SUBTOTAL', args);
        return [this.openReceipt('SUBTOTAL').subtotal()];
      case 'PAYMENT':
        return [this.openReceipt('PAYMENT').payment(args, this.register.drawer)];
      case 'CASH':
        return this.cashCommand(args);
      case 'X':
      case 'Z':
        return this.report(keyword, args);
      case 'COUNTERS':
        noArguments('COUNTERS', args);
        return this.register.counters();
      default:
        noArguments('VAT', args);
        return this.register.vatTable();
    }
  }

  /**
   * At the end of a script that did not fail: a receipt left open is cancelled and the script
   * fails with this error (without the `line <n>: ` prefix) naming where it was opened.
   */
  finish(): { line: number; message: string } | undefined {
    const receipt = this.receipt;
    if (!receipt) return undefined;
    this.abandon();
    return {
      line: receipt.openedAtLine,
      message: `receipt ${receipt.number} was not closed by the end of the script; it has been cancelled`,
    };
  }

  /** The script failed: its open receipt, if any, is cancelled (counted, nothing else). */
  abandon(): void {
    if (!this.receipt) return;
    this.receipt = undefined;
    this.register.cancel();
  }

  private openReceipt(command: string): Receipt {
    if (!this.receipt) throw new ScriptError(`${command}: no receipt is open (RECEIPT OPEN first)`);
    return this.receipt;
  }

  private assertNoReceipt(command: string): void {
    if (this.receipt) {
      throw new ScriptError(
        `${command}: receipt ${this.receipt.number} is open (line ${this.receipt.openedAtLine}); close or cancel it first`,
      );
    }
  }

  private receiptCommand(args: string[], line: number): string[] {
    const sub = args[0]?.toUpperCase();
    if (sub === 'OPEN') {
      const kind = (args[1] ?? 'SALE').toUpperCase();
      if ((kind !== 'SALE' && kind !== 'REFUND') || args.length > 2) {
        throw new ScriptError('usage: RECEIPT OPEN [SALE|REFUND]');
      }
      this.assertNoReceipt('RECEIPT OPEN');
      this.receipt = this.register.openReceipt(kind, line);
      return [`RECEIPT ${this.receipt.number} ${kind}`];
    }
    if (sub === 'CLOSE' || sub === 'CANCEL') {
      noArguments(`RECEIPT ${sub}`, args.slice(1));
      const receipt = this.openReceipt(`RECEIPT ${sub}`);
      if (sub === 'CANCEL') {
        this.abandon();
        return [`RECEIPT ${receipt.number} CANCELLED`];
      }
      const totals = receipt.totals();
      // A refund's cash comes out of the drawer: checked at PAYMENT, and again where the counters
      // change, in case another script emptied the drawer meanwhile.
      if (receipt.refundCash > this.register.drawer) {
        throw new ScriptError(
          `RECEIPT CLOSE: the drawer holds only ${formatMoney(this.register.drawer)} cash for this refund`,
        );
      }
      this.register.commit(totals);
      this.receipt = undefined;
      return Receipt.closingLines(receipt.number, totals);
    }
    if (sub === undefined)
      throw new ScriptError('usage: RECEIPT OPEN [SALE|REFUND], RECEIPT CLOSE or RECEIPT CANCEL');
    throw new ScriptError(`unknown command "RECEIPT ${args[0]}"`);
  }

  private cashCommand(args: string[]): string[] {
    const direction = args[0]?.toUpperCase();
    if (direction !== 'IN' && direction !== 'OUT')
      throw new ScriptError('usage: CASH IN <amount> or CASH OUT <amount>');
    const command = `CASH ${direction}`;
    if (args.length !== 2) throw new ScriptError(`usage: ${command} <amount>`);
    const amount = parseMoney(args[1]!);
    if (amount === undefined)
      throw new ScriptError(`${command}: bad amount "${args[1]}" (an amount like 100.00)`);
    if (amount === 0n) throw new ScriptError(`${command}: the amount must be above 0`);
    this.assertNoReceipt(command);
    if (direction === 'OUT' && amount > this.register.drawer) {
      throw new ScriptError(`CASH OUT: the drawer holds only ${formatMoney(this.register.drawer)}`);
    }
    if (direction === 'IN') this.register.cashIn(amount);
    else this.register.cashOut(amount);
    return [`${command} ${formatMoney(amount)}`, `DRAWER ${formatMoney(this.register.drawer)}`];
  }

  private report(letter: 'X' | 'Z', args: string[]): string[] {
    if (args[0]?.toUpperCase() !== 'REPORT') throw new ScriptError(`usage: ${letter} REPORT`);
    noArguments(`${letter} REPORT`, args.slice(1));
    if (letter === 'X') return this.register.xReport();
    this.assertNoReceipt('Z REPORT');
    return this.register.zReport();
  }
}

function noArguments(command: string, args: string[]): void {
  if (args.length > 0) throw new ScriptError(`${command} takes no arguments`);
}
