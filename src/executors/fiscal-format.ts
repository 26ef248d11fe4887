/**
 * Numbers and words of the simulator's fiscal commands (docs/simulator.md). Money is held in
 * integer cents as bigint, quantities in thousandths, percentages in hundredths: no float
 * rounding errors, and no overflow however long the process keeps counting.
 */

/** A problem with one script line; the simulator prefixes `line <n>: `. */
export class ScriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScriptError';
  }
}

/** Script text quoted in an error, but not at any length. */
export function clip(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

export const VAT_GROUPS = ['A', 'B', 'C', 'D'] as const;
export type VatGroup = (typeof VAT_GROUPS)[number];

/** VAT rates in basis points (1/100 of a percent). Prices are gross: VAT is included. */
export const VAT_RATES: Readonly<Record<VatGroup, bigint>> = { A: 2000n, B: 1000n, C: 500n, D: 0n };

export function parseVatGroup(text: string): VatGroup | undefined {
  const upper = text.toUpperCase();
  return (VAT_GROUPS as readonly string[]).includes(upper) ? (upper as VatGroup) : undefined;
}

/** `12`, `12.5`, `12.50`: 0 to 999999999.99. */
export function parseMoney(text: string): bigint | undefined {
  const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) return undefined;
  return BigInt(match[1]!) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
}

/** Quantity in thousandths: `2`, `0.5`, `1.250`; above 0, at most 999999.999. */
export function parseQuantity(text: string): bigint | undefined {
  const match = /^(\d{1,6})(?:\.(\d{1,3}))?$/.exec(text);
  if (!match) return undefined;
  const milli = BigInt(match[1]!) * 1000n + BigInt((match[2] ?? '').padEnd(3, '0'));
  return milli > 0n ? milli : undefined;
}

/** `10%`, `12.5%`: hundredths of a percent, above 0 and at most 100%. */
export function parsePercent(text: string): bigint | undefined {
  const match = /^(\d{1,3})(?:\.(\d{1,2}))?%$/.exec(text);
  if (!match) return undefined;
  const hundredths = BigInt(match[1]!) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
  return hundredths > 0n && hundredths <= 10_000n ? hundredths : undefined;
}

/** Integer division rounding half away from zero (the commercial rounding of receipts). */
export function divRound(numerator: bigint, denominator: bigint): bigint {
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  const quotient = (2n * n + d) / (2n * d);
  return negative ? -quotient : quotient;
}

/** The VAT contained in a gross amount: gross × rate / (100% + rate), rounded to the cent. */
export function vatIncluded(gross: bigint, rateBasisPoints: bigint): bigint {
  return divRound(gross * rateBasisPoints, 10_000n + rateBasisPoints);
}

function decimal(value: bigint, scale: number, minDecimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  let fraction = digits.slice(digits.length - scale);
  while (fraction.length > minDecimals && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Cents as `1234.50`, `-0.05`. */
export function formatMoney(cents: bigint): string {
  return decimal(cents, 2, 2);
}

/** Thousandths as `2`, `0.5`, `1.25`. */
export function formatQuantity(milli: bigint): string {
  return decimal(milli, 3, 0);
}

/** Basis points as `20.00%`. */
export function formatRate(basisPoints: bigint): string {
  return `${decimal(basisPoints, 2, 2)}%`;
}

/** Hundredths of a percent as `10%`, `12.5%`. */
export function formatPercent(hundredths: bigint): string {
  return `${decimal(hundredths, 2, 0)}%`;
}

/**
 * Splits command arguments on spaces and tabs; `"..."` groups words (an item name), with `\"`
 * and `\\` inside. A quoted word ends at its closing quote.
 */
export function splitWords(text: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t') {
      i += 1;
    } else if (c === '"') {
      let word = '';
      i += 1;
      for (;;) {
        if (i >= text.length) throw new ScriptError('unterminated quote');
        const d = text[i]!;
        if (d === '"') break;
        if (d === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
          word += text[i + 1];
          i += 2;
        } else {
          word += d;
          i += 1;
        }
      }
      i += 1;
      if (i < text.length && text[i] !== ' ' && text[i] !== '\t') {
        throw new ScriptError('a closing quote must be followed by a space');
      }
      words.push(word);
    } else {
      let end = i;
      while (end < text.length && text[end] !== ' ' && text[end] !== '\t') end += 1;
      words.push(text.slice(i, end));
      i = end;
    }
  }
  return words;
}
