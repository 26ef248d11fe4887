/**
 * Waves of a rollout (contract 7.5; docs/controller.md, "Waves"): the registers are taken wave by
 * wave in target order. Pure: from the wave sizes and the target's size to where each wave ends.
 */
import type { Rollout, Wave } from './job-types.ts';

/** "N%" of `total`, rounded up (a wave holds at least one register), or a plain count. */
export function waveSize(wave: Wave, total: number): number {
  if (typeof wave.size === 'number') return wave.size;
  const percent = Number(wave.size.slice(0, -1));
  return Math.max(1, Math.ceil((total * percent) / 100));
}

/**
 * The end (exclusive position) of each wave. Registers past the listed waves form one more wave
 * (a user who lists a 1-register pilot and a 10% wave still expects everybody to get the job).
 */
export function waveEnds(rollout: Rollout | undefined, total: number): number[] {
  const waves = rollout?.waves;
  if (!waves || waves.length === 0) return [total];
  const ends: number[] = [];
  let end = 0;
  for (const wave of waves) {
    if (end >= total) break;
    end = Math.min(total, end + waveSize(wave, total));
    ends.push(end);
  }
  if (end < total) ends.push(total);
  return ends;
}

/** The wave (0-based) a register at `position` belongs to. */
export function waveOf(ends: readonly number[], position: number): number {
  const index = ends.findIndex((end) => position < end);
  return index === -1 ? ends.length - 1 : index;
}

/** For the API: the wave being sent (1-based) and how many there are; undefined without waves. */
export function waveProgress(
  rollout: Rollout | undefined,
  total: number,
  openWave: number,
): { current: number; count: number } | undefined {
  if (!rollout?.waves || rollout.waves.length === 0) return undefined;
  const count = waveEnds(rollout, total).length;
  return { current: Math.min(openWave + 1, count), count };
}
