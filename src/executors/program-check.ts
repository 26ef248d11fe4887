/**
 * `--executor command` checks its program at start (docs/simulator.md, "Command executor"): a
 * missing or non-executable program is a configuration error (exit 2) rather than a device that
 * starts and then fails every task with ENOENT. A name without `/` is looked up on PATH, as
 * spawn() will.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

function executableFile(path: string): 'ok' | 'missing' | 'not-executable' {
  try {
    const stat = statSync(path);
    // root passes access(X_OK) for any file with one x bit: look at the bits too.
    if (!stat.isFile() || (stat.mode & 0o111) === 0) return 'not-executable';
  } catch {
    return 'missing';
  }
  try {
    accessSync(path, constants.X_OK);
    return 'ok';
  } catch {
    return 'not-executable';
  }
}

/** Undefined when `program` can be run; otherwise why not. */
export function programProblem(program: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (program.includes('/')) {
    const state = executableFile(program);
    if (state === 'missing') return `program ${program} does not exist`;
    if (state === 'not-executable') return `program ${program} is not an executable file (chmod +x?)`;
    return undefined;
  }
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  const states = dirs.map((dir) => executableFile(join(dir, program)));
  if (states.includes('ok')) return undefined;
  if (states.includes('not-executable')) return `program ${program} found on PATH but not executable`;
  return `program ${program} not found on PATH (give its full path)`;
}
