/**
 * `regbridge hash-password`: reads a password and prints its scrypt hash for a users file
 * (docs/broker.md, "Users file"). The password comes on stdin, never as an argument (that would
 * land in the shell history and the process list); on a terminal it is typed without echo.
 */
import type { Command } from 'commander';
import { hashPassword } from '../src/auth/password-hash.ts';
import { indexedCommand } from './command-index.ts';
import { addFlags, type FlagTable, flagSchema, parseFlagsOrReport } from './flags.ts';

export const hashPasswordFlags = {} satisfies FlagTable;
const hashPasswordSchema = flagSchema(hashPasswordFlags);

/** Everything on stdin up to its end; one trailing newline (echo, a heredoc) is not the password's. */
async function fromPipe(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** One line typed on the terminal, not echoed; Ctrl-C aborts. */
function fromTerminal(): Promise<string | undefined> {
  process.stderr.write('password (not shown): ');
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  let typed = '';
  return new Promise((resolve) => {
    const done = (value: string | undefined): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      resolve(value);
    };
    const onData = (text: string): void => {
      for (const char of text) {
        if (char === '\r' || char === '\n' || char === '\u0003') {
          done(char === '\u0003' ? undefined : typed);
          return;
        }
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.on('data', onData);
    stdin.resume();
  });
}

export function registerHashPasswordCommand(program: Command): void {
  const command = indexedCommand(program, 'hash-password');
  addFlags(command, hashPasswordFlags).action(async (_flags: unknown, cmd: Command) => {
    if (!parseFlagsOrReport(cmd, hashPasswordFlags, hashPasswordSchema)) return;
    const password = process.stdin.isTTY ? await fromTerminal() : await fromPipe();
    if (!password) {
      console.error('regbridge hash-password: no password given (an empty password is not allowed)');
      process.exitCode = 2;
      return;
    }
    console.log(await hashPassword(password));
  });
}
