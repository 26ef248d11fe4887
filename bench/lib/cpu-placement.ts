/**
 * Where scenario 12 (status-under-load.ts) runs its register hosts: the load generator, not the
 * system under test. Real registers have CPUs of their own, so in the figure of record the hosts
 * are confined to the upper half of the CPUs this process may use (CPU 1 of 0-1), and the store
 * broker and the controller, left unpinned, meet no host on the lower half (docs/decisions/bench-fleet-on-its-own-cores.md). `taskset` (util-linux) does the confining: Node has no affinity API.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

export type Placement =
  /** The hosts confined to `cpus` (a taskset list) of the CPUs `of` this process may use. */
  | { kind: 'own'; cpus: string; of: string }
  /** The hosts on every core, with the store side; `why` when the own placement was not possible. */
  | { kind: 'shared'; why?: string };

/** `0-1`, `0,2-3`, ... as CPU ids; what is not a number or a range is skipped. */
export function parseCpuList(list: string): number[] {
  const ids: number[] = [];
  for (const part of list.split(',')) {
    const match = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
    if (!match) continue;
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    for (let id = first; id <= last; id += 1) ids.push(id);
  }
  return ids;
}

/**
 * The CPU ids this process may run on (its `Cpus_allowed_list`), not 0..availableParallelism()-1:
 * in a cpuset such as `2,3` those would be the wrong ids. Undefined where /proc cannot tell.
 */
export function allowedCpus(status = '/proc/self/status'): number[] | undefined {
  try {
    const line = readFileSync(status, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Cpus_allowed_list:'));
    const ids = line === undefined ? [] : parseCpuList(line.slice(line.indexOf(':') + 1));
    return ids.length > 0 ? ids : undefined;
  } catch {
    return undefined;
  }
}

/** The hosts on the upper floor(n/2) of the `allowed` CPUs; shared with fewer than two. */
export function hostPlacement(allowed: number[] | undefined): Placement {
  if (allowed === undefined) return { kind: 'shared', why: 'the CPUs this process may use are unknown' };
  if (allowed.length < 2) return { kind: 'shared', why: 'one CPU: the register hosts share it' };
  const hosts = allowed.slice(allowed.length - Math.floor(allowed.length / 2));
  return { kind: 'own', cpus: hosts.join(','), of: allowed.join(',') };
}

/** How a figure's note says where the hosts ran. */
export function placementText(placement: Placement): string {
  return placement.kind === 'own'
    ? `register hosts confined to CPUs ${placement.cpus} of ${placement.of}; the store broker and the controller unpinned, without them on the others`
    : `register hosts on every core, shared with the store broker and the controller${placement.why ? ` (${placement.why})` : ''}`;
}

/**
 * Confines every thread of each pid to the placement's CPUs (`taskset -a -p -c`). If one fails
 * (taskset missing, a CPU list the kernel refuses) every pid goes back to all the allowed CPUs,
 * so no host is left confined under a placement reported as shared; the result says which.
 */
export function confine(pids: readonly number[], placement: Placement): Placement {
  if (placement.kind !== 'own') return placement;
  const set = (cpus: string, pid: number): boolean => {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (pids.every((pid) => set(placement.cpus, pid))) return placement;
  for (const pid of pids) set(placement.of, pid);
  return { kind: 'shared', why: `taskset could not confine them to CPUs ${placement.cpus}` };
}

/**
 * Every thread of each pid at nice `nice` (`--hosts-nice`, a diagnostic): on Linux a priority
 * belongs to a thread, so setpriority on the pid alone leaves V8's and libuv's threads at 0.
 */
export function renice(pids: readonly number[], nice: number): void {
  for (const pid of pids) for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice);
}
