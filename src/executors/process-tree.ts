/**
 * Ending the whole tree of a `command` executor's program (docs/simulator.md, docs/security.md):
 * every program carries `RB_TASK_MARK=<process mark>.<run>` in its environment, which descendants
 * inherit even after `setsid` or a double fork; at the end the group and every marked process
 * (/proc/<pid>/environ) are signalled. A `sh` watchdog on a pipe kills every marked process when
 * the service dies, even by SIGKILL. Used when no cgroup is available (task-cgroup.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { ownCgroupDirectory } from './task-cgroup.ts';

export const MARK_VARIABLE = 'RB_TASK_MARK';

/** This service process's mark: random, so two services on one host never touch each other's programs. */
const processMark = randomBytes(8).toString('hex');
let runs = 0;

const hasProc = existsSync('/proc/self/environ');

/** This service process's mark (the name of its cgroup, task-cgroup.ts). */
export function serviceMark(): string {
  return processMark;
}

/** A fresh mark for one program run. */
export function newRunMark(): string {
  runs += 1;
  return `${processMark}.${runs}`;
}

/**
 * PIDs (not this process) whose environment has `RB_TASK_MARK=<mark>` exactly, or starting with
 * `<mark>.` when `prefix` is set. Processes that vanish or cannot be read are skipped.
 */
export async function markedProcesses(mark: string, prefix = false): Promise<number[]> {
  if (!hasProc) return [];
  const exact = Buffer.from(`\0${MARK_VARIABLE}=${mark}\0`);
  const start = Buffer.from(`\0${MARK_VARIABLE}=${mark}.`);
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const found: number[] = [];
  await Promise.all(
    entries.map(async (entry) => {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return;
      const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
      if (!environ || environ.length === 0) return;
      const padded = Buffer.concat([Buffer.from([0]), environ, Buffer.from([0])]);
      if (padded.includes(exact) || (prefix && padded.includes(start))) found.push(pid);
    }),
  );
  return found;
}

/** The process group of `pid` (field 5 of /proc/<pid>/stat), undefined when it is gone. */
async function groupOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  if (stat === undefined) return undefined;
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false; // ESRCH: gone already; EPERM: not ours
  }
}

/** Every process's parent and start time (fields 4 and 22 of /proc/<pid>/stat). */
async function processTable(): Promise<Map<number, { parent: number; started: string }>> {
  const table = new Map<number, { parent: number; started: string }>();
  if (!hasProc) return table;
  const entries = await readdir('/proc').catch(() => [] as string[]);
  await Promise.all(
    entries.map(async (entry) => {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || pid <= 0) return;
      const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
      if (stat === undefined) return;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(pid, { parent: Number(fields[1]), started: fields[19] ?? '' });
    }),
  );
  return table;
}

/**
 * The descendants of a program, followed by parent links while it runs: they need no mark, so
 * one that dropped it (`env -u RB_TASK_MARK setsid ...`) is still found while its parent lives.
 * `remember()` (every SEEN_EVERY_MS while the program runs) keeps each one seen with its start
 * time, so one orphaned after it was seen is still ended, and a reused pid is not.
 */
export class Descendants {
  private readonly seen = new Map<number, string>();

  constructor(private readonly root: number) {}

  async remember(): Promise<void> {
    const table = await processTable();
    const children = new Map<number, number[]>();
    for (const [pid, { parent }] of table) children.set(parent, [...(children.get(parent) ?? []), pid]);
    const queue = [this.root];
    for (let i = 0; i < queue.length && this.seen.size < MAX_REMEMBERED; i += 1) {
      for (const child of children.get(queue[i]!) ?? []) {
        if (child === this.root || this.seen.has(child)) continue;
        this.seen.set(child, table.get(child)!.started);
        queue.push(child);
      }
    }
  }

  /** The remembered descendants still alive as the same processes. */
  async alive(): Promise<number[]> {
    await this.remember();
    const table = await processTable();
    return [...this.seen].filter(([pid, started]) => table.get(pid)?.started === started).map(([pid]) => pid);
  }
}

/** Descendants remembered per program at most. */
const MAX_REMEMBERED = 10_000;
/** How often the descendants of a running program are looked up. */
export const SEEN_EVERY_MS = 100;

/**
 * Signals the process group `groupId` (the program, started detached, leads it), every
 * descendant `descendants` knows, and every process carrying `mark`. With SIGKILL the scan
 * repeats until it finds nobody new (a process may fork while the scan runs), at most `passes`
 * times.
 */
export async function signalTree(
  groupId: number | undefined,
  mark: string,
  sig: NodeJS.Signals,
  passes = 10,
  descendants?: Descendants,
): Promise<void> {
  if (groupId !== undefined) signal(-groupId, sig);
  const signalled = new Set<number>();
  for (let pass = 0; pass < (sig === 'SIGKILL' ? passes : 1); pass += 1) {
    const found = [...(await markedProcesses(mark)), ...((await descendants?.alive()) ?? [])];
    const fresh = [...new Set(found)].filter((pid) => !signalled.has(pid));
    if (fresh.length === 0) return;
    for (const pid of fresh) {
      signalled.add(pid);
      // The group had this signal already; one SIGTERM each, not two.
      if (groupId !== undefined && (await groupOf(pid)) === groupId) continue;
      signal(pid, sig);
    }
  }
}

// `cat` returns when the service's end of the pipe closes; the programs' cgroups (when used,
// under $2, the service's own cgroup: task-cgroup.ts) are killed and removed; grep -z matches one variable per NUL-separated entry of every
// /proc/<pid>/environ; repeated in case something forked meanwhile.
const WATCHDOG_SCRIPT = `
cat >/dev/null
g="$2/regbridge-$1"
if [ -n "$2" ] && [ -d "$g" ]; then
  for d in "$g"/*/; do [ -d "$d" ] && echo 1 >"$d/cgroup.kill"; done
  j=0
  while [ "$j" -lt 50 ]; do
    for d in "$g"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
    rmdir "$g" 2>/dev/null && break
    sleep 0.1
    j=$((j + 1))
  done
fi
i=0
while [ "$i" -lt 10 ]; do
  pids=$(grep -lsz "^${MARK_VARIABLE}=$1\\." /proc/[0-9]*/environ | cut -d/ -f3)
  [ -z "$pids" ] && exit 0
  kill -KILL $pids 2>/dev/null
  i=$((i + 1))
done
`;

let watchdog: ChildProcess | undefined;

/**
 * Starts the service's watchdog once: it keeps no event loop alive and is outside the service's
 * process group, so a Ctrl-C does not take it away while programs still run.
 */
export function ensureWatchdog(): void {
  if (watchdog || !hasProc) return;
  const env = { ...process.env };
  delete env[MARK_VARIABLE];
  try {
    watchdog = spawn(
      'sh',
      ['-c', WATCHDOG_SCRIPT, 'regbridge-watchdog', processMark, ownCgroupDirectory() ?? ''],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true,
        env,
      },
    );
  } catch {
    return; // no sh: task ends still kill the tree; only the SIGKILL case is uncovered
  }
  watchdog.on('error', () => {
    watchdog = undefined;
  });
  watchdog.stdin?.on('error', () => undefined);
  watchdog.unref();
  (watchdog.stdin as Socket | null)?.unref();
}
