/**
 * The simulator's command table (docs/simulator.md, "Commands"): every command a script may use,
 * its argument shape, what it does and an example line. The parser takes its command words from
 * here (fiscal-session.ts), and the controller serves it to the dashboard for hints and to check
 * scripts, so hints and the simulator cannot drift apart.
 */

/** What an argument holds; `text` is the rest of the line verbatim. */
export type SimulatorArgumentKind =
  | 'text'
  | 'milliseconds'
  | 'amount'
  | 'amount-or-percent'
  | 'quantity'
  | 'name'
  | 'vat-group'
  | 'choice';

export interface SimulatorArgument {
  readonly name: string;
  readonly kind: SimulatorArgumentKind;
  readonly optional?: boolean;
  /** For `choice`: the words allowed (any case). */
  readonly choices?: readonly string[];
}

export interface SimulatorCommand {
  /** The command words, upper case: `X REPORT`, `RECEIPT OPEN`, `PRINT`. */
  readonly command: string;
  readonly arguments: readonly SimulatorArgument[];
  /** One line: what it does. */
  readonly description: string;
  /** A line that runs as written (in a script that also has what it needs, see `needsReceipt`). */
  readonly example: string;
  /** Runs only inside an open receipt (after RECEIPT OPEN). */
  readonly needsReceipt: boolean;
}

const amount: SimulatorArgument = { name: 'amount', kind: 'amount' };

export const SIMULATOR_COMMANDS: readonly SimulatorCommand[] = Object.freeze([
  {
    command: 'PRINT',
    arguments: [{ name: 'text', kind: 'text', optional: true }],
    description: 'adds the text as one line of the report',
    example: 'PRINT hello',
    needsReceipt: false,
  },
  {
    command: 'SLEEP',
    arguments: [{ name: 'ms', kind: 'milliseconds' }],
    description: 'waits that many milliseconds (0 to 60000)',
    example: 'SLEEP 500',
    needsReceipt: false,
  },
  {
    command: 'FAIL',
    arguments: [{ name: 'message', kind: 'text' }],
    description: 'ends the task FAILURE with the message as its error',
    example: 'FAIL out of paper',
    needsReceipt: false,
  },
  {
    command: 'RECEIPT OPEN',
    arguments: [{ name: 'kind', kind: 'choice', optional: true, choices: ['SALE', 'REFUND'] }],
    description: 'opens a receipt (a sale unless REFUND)',
    example: 'RECEIPT OPEN',
    needsReceipt: false,
  },
  {
    command: 'ITEM',
    arguments: [
      { name: 'name', kind: 'name' },
      { name: 'quantity', kind: 'quantity' },
      { name: 'unit price', kind: 'amount' },
      { name: 'VAT group', kind: 'vat-group' },
    ],
    description: 'adds an item to the open receipt',
    example: 'ITEM "Bread" 2 1.25 A',
    needsReceipt: true,
  },
  {
    command: 'DISCOUNT',
    arguments: [{ name: 'amount or percent', kind: 'amount-or-percent' }],
    description: 'discounts the last item (an amount, or a percentage like 10%)',
    example: 'DISCOUNT 10%',
    needsReceipt: true,
  },
  {
    command: 'SUBTOTAL',
    arguments: [],
    description: 'prints the total so far',
    example: 'SUBTOTAL',
    needsReceipt: true,
  },
  {
    command: 'PAYMENT',
    arguments: [{ name: 'means', kind: 'choice', choices: ['CASH', 'CARD'] }, amount],
    description: 'records a payment in cash or by card',
    example: 'PAYMENT CASH 5.00',
    needsReceipt: true,
  },
  {
    command: 'RECEIPT CLOSE',
    arguments: [],
    description: 'closes the paid receipt and adds it to the counters',
    example: 'RECEIPT CLOSE',
    needsReceipt: true,
  },
  {
    command: 'RECEIPT CANCEL',
    arguments: [],
    description: 'drops the open receipt (counted as cancelled)',
    example: 'RECEIPT CANCEL',
    needsReceipt: true,
  },
  {
    command: 'CASH IN',
    arguments: [amount],
    description: 'puts cash into the drawer',
    example: 'CASH IN 100.00',
    needsReceipt: false,
  },
  {
    command: 'CASH OUT',
    arguments: [amount],
    description: 'takes cash out of the drawer',
    example: 'CASH OUT 20.00',
    needsReceipt: false,
  },
  {
    command: 'X REPORT',
    arguments: [],
    description: "prints the day's counters; resets nothing",
    example: 'X REPORT',
    needsReceipt: false,
  },
  {
    command: 'Z REPORT',
    arguments: [],
    description: "prints the day's counters and resets them: closes the fiscal day",
    example: 'Z REPORT',
    needsReceipt: false,
  },
  {
    command: 'COUNTERS',
    arguments: [],
    description: 'prints the lifetime counters',
    example: 'COUNTERS',
    needsReceipt: false,
  },
  {
    command: 'VAT',
    arguments: [],
    description: 'prints the VAT table',
    example: 'VAT',
    needsReceipt: false,
  },
] satisfies SimulatorCommand[]);

/** First word -> the second words it takes (empty: a one-word command). */
export const SIMULATOR_KEYWORDS: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const keywords = new Map<string, Set<string>>();
  for (const { command } of SIMULATOR_COMMANDS) {
    const [first, second] = command.split(' ') as [string, string | undefined];
    const seconds = keywords.get(first) ?? new Set<string>();
    if (second !== undefined) seconds.add(second);
    keywords.set(first, seconds);
  }
  return keywords;
})();

/** `X REPORT`, `CASH IN <amount>`, `RECEIPT OPEN [kind]`: how a command is written. */
export function commandUsage(command: SimulatorCommand): string {
  const args = command.arguments.map((a) => {
    const shown = a.kind === 'choice' ? a.choices!.join('|') : `<${a.name}>`;
    return a.optional ? `[${shown}]` : shown;
  });
  return [command.command, ...args].join(' ');
}
