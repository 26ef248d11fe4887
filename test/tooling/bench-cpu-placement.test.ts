/**
 * Where scenario 12 runs its register hosts (bench/lib/cpu-placement.ts; docs/decisions/bench-fleet-on-its-own-cores.md): the CPU list /proc gives, the upper half for the hosts, and a real
 * child process confined with taskset, read back from its own /proc status.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  allowedCpus,
  confine,
  hostPlacement,
  parseCpuList,
  placementText,
  renice,
} from '../../bench/lib/cpu-placement.ts';
import { terminate } from '../support/processes.ts';

describe('the register hosts placement', () => {
  it('reads CPU lists as the kernel writes them', () => {
    expect(parseCpuList('0-1')).toEqual([0, 1]);
    expect(parseCpuList('0,2-4,7\n')).toEqual([0, 2, 3, 4, 7]);
    expect(parseCpuList(' 3 ')).toEqual([3]);
    expect(parseCpuList('x,5')).toEqual([5]);
  });

  it('takes the ids from Cpus_allowed_list, not 0..n-1 (a cpuset of 2,3)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpus-'));
    const status = join(dir, 'status');
    writeFileSync(status, 'Name:\tnode\nCpus_allowed:\tc\nCpus_allowed_list:\t2-3\nMems_allowed:\t1\n');
    expect(allowedCpus(status)).toEqual([2, 3]);
    expect(hostPlacement([2, 3])).toEqual({ kind: 'own', cpus: '3', of: '2,3' });
    expect(allowedCpus(join(dir, 'missing'))).toBeUndefined();
    rmSync(dir, { recursive: true });
    expect(allowedCpus()?.length).toBeGreaterThan(0);
  });

  it('gives the hosts the upper floor(n/2) CPUs, and shares with fewer than two', () => {
    expect(hostPlacement([0, 1])).toEqual({ kind: 'own', cpus: '1', of: '0,1' });
    expect(hostPlacement([0, 1, 2])).toEqual({ kind: 'own', cpus: '2', of: '0,1,2' });
    expect(hostPlacement([0, 1, 2, 3])).toEqual({ kind: 'own', cpus: '2,3', of: '0,1,2,3' });
    expect(hostPlacement([0])).toEqual({ kind: 'shared', why: 'one CPU: the register hosts share it' });
    expect(placementText(hostPlacement([0, 1]))).toBe(
      'register hosts confined to CPUs 1 of 0,1; the store broker and the controller unpinned, without them on the others',
    );
  });

  describe('confining a real process', () => {
    let child: ChildProcess | undefined;
    afterEach(async () => {
      if (child) await terminate(child);
      child = undefined;
    });
    const allowedOf = (pid: number) => allowedCpus(`/proc/${pid}/status`);

    /** A node process, once it printed: its libuv and V8 threads exist by then. */
    async function idleNode(): Promise<number> {
      const started = spawn(process.execPath, ['-e', "console.log('up'); setTimeout(() => {}, 60_000)"], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      child = started;
      await once(started.stdout!, 'data');
      return started.pid!;
    }

    it('renices every thread, not only the main one (--hosts-nice)', async () => {
      const pid = await idleNode();
      renice([pid], 7);
      const threads = readdirSync(`/proc/${pid}/task`);
      expect(threads.length).toBeGreaterThan(1);
      for (const tid of threads) expect(getPriority(Number(tid))).toBe(7);
    });

    it('confines every thread with taskset, and reports a list the kernel refuses as shared, undone', async () => {
      const pid = await idleNode();
      const all = allowedOf(pid)!;
      const placement = hostPlacement(all);
      if (placement.kind === 'shared') {
        // One CPU here: nothing to confine, and confine() leaves it so.
        expect(confine([pid], placement)).toBe(placement);
        return;
      }
      expect(confine([pid], placement)).toBe(placement);
      expect(allowedOf(pid)).toEqual(parseCpuList(placement.cpus));
      // -a: every thread, libuv's and V8's too, not only the main one.
      const threads = readdirSync(`/proc/${pid}/task`);
      expect(threads.length).toBeGreaterThan(1);
      for (const tid of threads)
        expect(allowedCpus(`/proc/${pid}/task/${tid}/status`)).toEqual(parseCpuList(placement.cpus));
      const refused = confine([pid], { kind: 'own', cpus: '4096', of: placement.of });
      expect(refused).toEqual({ kind: 'shared', why: 'taskset could not confine them to CPUs 4096' });
      expect(allowedOf(pid)).toEqual(all);
    });
  });
});
