/**
 * A cgroup v2 per program of the `command` executor (docs/security.md;
 * docs/decisions/command-tree-cgroup.md): nothing a program starts can leave it, and `cgroup.kill`
 * ends it all at once. Used where the service may create cgroups, else process-tree.ts. Node cannot
 * spawn into a cgroup, so the program runs as `sh -c 'echo 0 >"$1/cgroup.procs" && exec "$@"'`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `sh -c` script: $1 is the run's cgroup, then the program and its arguments. */
// Not moved (the cgroup went away): the program does not run uncontained; exit 125 and say why.
export const JOIN_SCRIPT =
  'echo 0 >"$1/cgroup.procs" 2>/dev/null || { echo "regbridge: cannot join the cgroup $1" >&2; exit 125; }; shift; exec "$@"';

/** The service's own cgroup v2 directory, from /proc/self/cgroup and /proc/self/mountinfo. */
export function ownCgroupDirectory(): string | undefined {
  let membership: string;
  let mounts: string;
  try {
    membership = readFileSync('/proc/self/cgroup', 'utf8');
    mounts = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  const path = /^0::(\/.*)$/m.exec(membership)?.[1];
  if (path === undefined) return undefined;
  for (const line of mounts.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right?.startsWith('cgroup2 ')) continue;
    const fields = left!.split(' ');
    const root = fields[3]!;
    const mountPoint = fields[4]!.replace(/\\040/g, ' ');
    if (root === '/' || path === root || path.startsWith(`${root}/`))
      return join(mountPoint, root === '/' ? path : path.slice(root.length));
  }
  return undefined;
}

/** The cgroups of one service process: `<own cgroup>/regbridge-<process mark>/<run>`. */
export class TaskCgroups {
  private constructor(readonly parent: string) {}

  /**
   * Whether this process may create a cgroup below its own, move a process into it and kill
   * it with cgroup.kill: a TaskCgroups when it may, the reason when not. Leaves nothing behind.
   */
  static probe(processMark: string): TaskCgroups | string {
    const own = ownCgroupDirectory();
    if (own === undefined) return 'no cgroup v2 hierarchy is mounted (or this is not Linux)';
    const parent = join(own, `regbridge-${processMark}`);
    const probe = join(parent, 'probe');
    try {
      mkdirSync(probe, { recursive: true });
    } catch (error) {
      return `cannot create a cgroup under ${own} (${(error as NodeJS.ErrnoException).code ?? error})`;
    }
    try {
      if (!existsSync(join(probe, 'cgroup.kill'))) return 'the kernel has no cgroup.kill (Linux < 5.14)';
      const moved = spawnSync('sh', ['-c', JOIN_SCRIPT, 'regbridge-task', probe, 'true'], {
        stdio: 'ignore',
      });
      if (moved.status !== 0) return `cannot move a process into ${probe}`;
      return new TaskCgroups(parent);
    } finally {
      removeDirectory(probe);
      removeDirectory(parent);
    }
  }

  /** A fresh, empty cgroup for one run. */
  create(run: string): string {
    const directory = join(this.parent, run);
    mkdirSync(directory, { recursive: true });
    return directory;
  }

  /** Kills and removes a run's cgroup (endCgroup), and the parent once no run is left in it. */
  async end(directory: string): Promise<void> {
    await endCgroup(directory);
    removeDirectory(this.parent);
  }
}

function removeDirectory(directory: string): void {
  try {
    rmdirSync(directory);
  } catch {
    // busy (a process is still exiting) or gone
  }
}

/** The pids in a run's cgroup (none once it is gone). */
export function cgroupPids(directory: string): number[] {
  try {
    return readFileSync(join(directory, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** SIGKILL to every process in the cgroup, including those forked while it runs. */
export function killCgroup(directory: string): void {
  try {
    writeFileSync(join(directory, 'cgroup.kill'), '1');
  } catch {
    // gone already
  }
}

function populated(directory: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(join(directory, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Kills the run's cgroup, waits at most `waitMs` for its processes to exit (one stuck in D state
 * is left to the watchdog), and removes it.
 */
export async function endCgroup(directory: string, waitMs = 5000): Promise<void> {
  killCgroup(directory);
  const deadline = Date.now() + waitMs;
  while (populated(directory) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  removeDirectory(directory);
}
