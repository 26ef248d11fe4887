/**
 * The built-in simulator (executor `simulator`, the default; docs/simulator.md). Lines end in
 * CR LF or LF; blank lines and `#` comments are skipped; keywords are case-insensitive; the
 * report is the produced lines joined with `\n`. PRINT, SLEEP and FAIL are the contract's; the
 * fiscal commands (fiscal-session.ts) make it behave like a cash register. docs/simulator.md.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EXECUTOR_DEFAULTS, type ExecutionResult, type Executor } from './executor.ts';
import { clip, ScriptError } from './fiscal-format.ts';
import { FiscalRegister } from './fiscal-register.ts';
import { FiscalSession } from './fiscal-session.ts';
import { CappedLines } from './report-cap.ts';

export interface SimulatorOptions {
  /** Whole-script time limit in ms (`--script-timeout`); 0 or less: none. */
  timeoutMs?: number;
  /** Report size limit in bytes (`--output-cap`). */
  outputCap?: number;
  /** The register whose counters scripts change; one per executor by default. */
  register?: FiscalRegister;
}

export const MAX_SLEEP_MS = 60_000;
/** A long script gives the event loop (HTTP, MQTT) a turn this often. */
const COMMANDS_PER_TURN = 1000;

/** `FAIL <message>`: the task's error is exactly the message (docs/simulator.md). */
class FailCommand extends Error {}

function reasonText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason ?? 'aborted');
}

/** The error of a script cut short; a reason that already is one (the cut signal's) is kept. */
function abortedError(reason: unknown): ScriptError {
  return reason instanceof ScriptError ? reason : new ScriptError(`aborted (${reasonText(reason)})`);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class SimulatorExecutor implements Executor {
  readonly name = 'simulator';
  /** Counters persist for this executor's life, across scripts (docs/simulator.md). */
  readonly register: FiscalRegister;
  private readonly timeoutMs: number;
  private readonly outputCap: number;

  constructor(options: SimulatorOptions = {}) {
    this.register = options.register ?? new FiscalRegister();
    this.timeoutMs = options.timeoutMs ?? EXECUTOR_DEFAULTS.timeoutMs;
    this.outputCap = options.outputCap ?? EXECUTOR_DEFAULTS.outputCap;
  }

  async execute(script: string, signal: AbortSignal): Promise<ExecutionResult> {
    const parsed = parse(script);
    if (!('commands' in parsed)) return { ok: false, error: `line ${parsed.line}: ${parsed.message}` };
    if (!parsed.waits) {
      // No SLEEP: the script never waits on a timer, so neither the abort nor the time-out can
      // strike while a command runs; checking the queue's signal before each command and the
      // deadline after each yield (the only awaits) gives the same outcome as the cut signal
      // below without its cost (an AbortController, a listener and a timer per script).
      const deadline = this.timeoutMs > 0 ? Date.now() + this.timeoutMs : Number.POSITIVE_INFINITY;
      return this.runAll(parsed.commands, signal, deadline);
    }
    // One signal for both ways a waiting script is cut short; its reason becomes the error text.
    const cut = new AbortController();
    const onAbort = (): void => cut.abort(abortedError(signal.reason));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const timer =
      this.timeoutMs > 0
        ? setTimeout(() => cut.abort(new ScriptError(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs)
        : undefined;
    try {
      return await this.runAll(parsed.commands, cut.signal, Number.POSITIVE_INFINITY);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Runs the parsed commands; `signal` aborts (before the next command, or inside a SLEEP). */
  private async runAll(commands: Command[], signal: AbortSignal, deadline: number): Promise<ExecutionResult> {
    const session = new FiscalSession(this.register);
    const report = new CappedLines(this.outputCap);
    let line = 0;
    try {
      for (let index = 0; index < commands.length; index += 1) {
        const command = commands[index]!;
        line = command.line;
        if (index > 0 && index % COMMANDS_PER_TURN === 0) {
          await nextTurn();
          if (Date.now() >= deadline) throw new ScriptError(`timed out after ${this.timeoutMs} ms`);
        }
        if (signal.aborted) throw abortedError(signal.reason);
        if (command.keyword === 'SLEEP') await sleep(command.sleepMs ?? 0, signal);
        else this.run(command, session, report);
      }
      const leftOpen = session.finish();
      if (leftOpen) return { ok: false, error: `line ${leftOpen.line}: ${leftOpen.message}` };
      return { ok: true, report: report.text() };
    } catch (error) {
      session.abandon();
      if (error instanceof FailCommand) return { ok: false, error: error.message };
      if (error instanceof ScriptError) return { ok: false, error: `line ${line}: ${error.message}` };
      // A bug here must still end the task, not the device (Executor contract: never reject).
      return { ok: false, error: `line ${line}: internal error: ${reasonText(error)}` };
    }
  }

  /** Every command but SLEEP: synchronous. */
  private run(command: Command, session: FiscalSession, report: CappedLines): void {
    switch (command.keyword) {
      case 'PRINT':
        report.add(command.rest);
        return;
      case 'FAIL':
        throw command.rest === '' ? new ScriptError('FAIL (no message)') : new FailCommand(command.rest);
      default:
        for (const line of session.run(command.keyword, command.rest, command.line)) report.add(line);
    }
  }
}

interface Command {
  line: number;
  /** Upper case. */
  keyword: string;
  /** The text after the keyword and the one whitespace character that follows it, verbatim. */
  rest: string;
  sleepMs?: number;
}

/** The problem of one command line (its keyword as written and the rest), or undefined. */
function lineProblem(word: string, rest: string): string | undefined {
  const keyword = word.toUpperCase();
  if (keyword === 'SLEEP') {
    const argument = rest.trim();
    const ms = /^\d{1,5}$/.test(argument) ? Number(argument) : Number.NaN;
    if (!(ms <= MAX_SLEEP_MS)) {
      return `SLEEP needs a whole number of milliseconds from 0 to ${MAX_SLEEP_MS}, got "${clip(argument)}"`;
    }
    return undefined;
  }
  if (keyword === 'PRINT' || keyword === 'FAIL') return undefined;
  return FiscalSession.commandError(word, rest);
}

/** The command lines of a script: line number, keyword as written, the rest verbatim. */
function* commandLines(script: string): Generator<{ line: number; word: string; rest: string }> {
  const lines = script.split(/\r?\n/);
  for (let index = 0; index < lines.length; index += 1) {
    const text = lines[index]!.trimStart();
    if (text === '' || text.startsWith('#')) continue;
    const match = /^(\S+)(?:\s(.*))?$/s.exec(text)!;
    yield { line: index + 1, word: match[1]!, rest: match[2] ?? '' };
  }
}

/**
 * Every line the simulator would refuse, with its line number: the same check that runs before
 * a script runs (parse below), for controllers that check a script before sending it.
 */
export function simulatorProblems(script: string): { line: number; message: string }[] {
  const problems: { line: number; message: string }[] = [];
  for (const { line, word, rest } of commandLines(script)) {
    const message = lineProblem(word, rest);
    if (message !== undefined) problems.push({ line, message });
  }
  return problems;
}

/**
 * Splits the script into commands and checks every command word (and SLEEP's argument) before
 * anything runs, so a typo on line 40 does not leave the first 39 lines' receipts behind.
 */
function parse(script: string): { commands: Command[]; waits: boolean } | { line: number; message: string } {
  const commands: Command[] = [];
  let waits = false;
  for (const { line, word, rest } of commandLines(script)) {
    const error = lineProblem(word, rest);
    if (error !== undefined) return { line, message: error };
    const command: Command = { line, keyword: word.toUpperCase(), rest };
    if (command.keyword === 'SLEEP') {
      waits = true;
      command.sleepMs = Number(rest.trim());
    }
    commands.push(command);
  }
  return { commands, waits };
}
