/**
 * Once the configuration is read, the service's `REGBRIDGE_*` settings (passwords among them)
 * leave its environment (docs/security.md): /proc/<pid>/environ shows the start-up block to
 * processes of the same user, so the values are also overwritten there via /proc/self/mem.
 * Linux only; elsewhere only process.env is cleaned and the caller is told.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

const PREFIX = 'REGBRIDGE_';

/** Fields 50 and 51 of /proc/self/stat (Linux >= 3.5): where the environment block lies. */
function environmentBlock(): { start: number; end: number } {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { start: Number(fields[50 - 3]), end: Number(fields[51 - 3]) };
}

/**
 * Removes every `REGBRIDGE_*` variable from process.env and blanks its value in the process's
 * environment block. Returns false when the block could not be blanked.
 */
export function scrubServiceEnvironment(): boolean {
  for (const name of Object.keys(process.env)) {
    if (name.toUpperCase().startsWith(PREFIX)) delete process.env[name];
  }
  let fd: number | undefined;
  try {
    const block = readFileSync('/proc/self/environ');
    const { start, end } = environmentBlock();
    if (!(start > 0 && end - start === block.length)) return false;
    fd = openSync('/proc/self/mem', 'r+');
    let at = 0;
    while (at < block.length) {
      const next = block.indexOf(0, at);
      const stop = next < 0 ? block.length : next;
      const entry = block.toString('latin1', at, stop);
      const equals = entry.indexOf('=');
      if (equals > 0 && entry.slice(0, equals).toUpperCase().startsWith(PREFIX)) {
        const blank = Buffer.alloc(stop - at - equals - 1, '*');
        if (blank.length > 0) writeSync(fd, blank, 0, blank.length, start + at + equals + 1);
      }
      at = stop + 1;
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
