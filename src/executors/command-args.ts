/**
 * `--command "<program> [args]"` split the way a POSIX shell splits words, without a shell
 * (docs/simulator.md, "Command executor"): nothing is expanded, `|`, `>`, `$X`, `*` are plain
 * characters. Spaces, tabs and newlines separate words; `'...'` is literal; inside `"..."` a
 * backslash escapes only `"`, `\`, `$` and `` ` ``; outside quotes a backslash escapes any
 * character; quoted and unquoted parts next to each other form one word; `''` is an empty word.
 */
export class CommandLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandLineError';
  }
}

const SEPARATORS = new Set([' ', '\t', '\n', '\r']);
const ESCAPABLE_IN_DOUBLE_QUOTES = new Set(['"', '\\', '$', '`']);

export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  /** A word has started, even if it is still empty (`''`). */
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (SEPARATORS.has(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i += 1;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new CommandLineError(`unterminated ' quote at character ${i + 1}`);
      word += line.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      const start = i;
      i += 1;
      for (;;) {
        if (i >= line.length) throw new CommandLineError(`unterminated " quote at character ${start + 1}`);
        const d = line[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && ESCAPABLE_IN_DOUBLE_QUOTES.has(line[i + 1]!)) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i += 1;
        }
      }
      i += 1;
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new CommandLineError('a backslash at the end escapes nothing');
      word += line[i + 1];
      i += 2;
    } else {
      word += c;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  if (words.length === 0 || words[0] === '') throw new CommandLineError('no program given');
  return words;
}
