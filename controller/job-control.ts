/**
 * A running job's own status (contract 7.4-7.5; docs/controller.md, "Rollout control"): SCHEDULED
 * until its startAt, WAITING_FOR_WINDOW while its window is shut, PAUSED by a person or by a wave
 * whose success ratio was not met (or that asks for a pause after it), IN_PROGRESS otherwise;
 * which wave may be sent; which registers join a continuous job. Its changes are saved by the run.
 */
import type { StoredJob } from './job-history.ts';
import type { JobLedger } from './job-ledger.ts';
import { type JobStatus, jobEnded, resultEnded } from './job-types.ts';
import { timedStatus } from './job-window.ts';
import type { PacingClock } from './rollout.ts';
import { matchesTarget, onlyDevices } from './target-match.ts';
import type { DeviceEntry } from './types.ts';
import { waveEnds, waveOf, waveProgress } from './waves.ts';

/** The statuses the clock moves a job between. */
const TIMED: readonly JobStatus[] = ['SCHEDULED', 'WAITING_FOR_WINDOW', 'IN_PROGRESS'];

export interface JobControlDeps {
  clock: PacingClock;
  /** The job's status, pausedReason or openWave changed: write it (and announce it). */
  save: () => void;
  onAudit: (action: 'job_paused', detail: string) => void;
  /** The job may send again. */
  pump: () => void;
}

export class JobControl {
  private readonly job: StoredJob;
  private readonly results: JobLedger;
  private readonly deps: JobControlDeps;
  private timer: unknown;

  /** The index of the last wave released. */
  private get wave(): number {
    return this.job.openWave ?? 0;
  }

  private set wave(value: number) {
    this.job.openWave = value;
  }
  private stopped = false;

  constructor(job: StoredJob, results: JobLedger, deps: JobControlDeps) {
    this.job = job;
    this.results = results;
    this.deps = deps;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Sets the status the clock gives (unless paused or ended) and a timer for its next change.
   * `save`: write a change (false: the job is being inserted with it).
   */
  refresh(save: boolean): void {
    if (this.stopped || jobEnded(this.job.status)) return;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const now = this.deps.clock.now();
    const { status, changeAt } = timedStatus(this.job, now);
    // Only the clock's own statuses change here: a pause (or any other status) stays until lifted.
    if (TIMED.includes(this.job.status) && this.job.status !== status) {
      this.job.status = status;
      if (save) this.deps.save();
    }
    if (Number.isFinite(changeAt)) {
      // Long waits are armed again when they fire (setTimeout's limit is ~24.8 days).
      this.timer = this.deps.clock.setTimeout(
        () => {
          this.timer = undefined;
          this.refresh(true);
          this.deps.pump();
        },
        Math.min(2 ** 31 - 1, Math.max(0, changeAt - now)),
      );
    }
  }

  pause(reason: string): void {
    this.job.status = 'PAUSED';
    this.job.pausedReason = reason;
    this.deps.save();
  }

  /** Back to where the job was: the clock's status, and the next wave if the last one is done. */
  resume(): void {
    if (this.job.status !== 'PAUSED') return;
    this.job.status = 'IN_PROGRESS';
    this.job.pausedReason = undefined;
    const ends = this.ends();
    if (this.wave < ends.length - 1 && this.waveDone(ends, this.wave)) this.wave += 1;
    this.refresh(false);
    this.deps.save();
    this.advanceWaves();
    this.deps.pump();
  }

  progress(): { current: number; count: number } | undefined {
    return waveProgress(this.job.rollout, this.results.size, this.wave);
  }

  waveOpen(deviceId: string): boolean {
    if (!this.job.rollout?.waves) return true;
    return waveOf(this.ends(), this.results.position(deviceId)) <= this.wave;
  }

  /** A result ended: the next wave may open, or the job pauses at a wave's end. */
  afterEnd(): void {
    if (!jobEnded(this.job.status)) this.advanceWaves();
  }

  /** A register not in the job that a continuous job's target now takes in. */
  joins(entry: DeviceEntry): boolean {
    const { target } = this.job;
    if (target.continuous !== true || jobEnded(this.job.status) || onlyDevices(target)) return false;
    return matchesTarget(target, entry);
  }

  private ends(): number[] {
    return waveEnds(this.job.rollout, this.results.size);
  }

  private waveDone(ends: readonly number[], wave: number): boolean {
    const from = wave === 0 ? 0 : ends[wave - 1]!;
    let position = 0;
    for (const result of this.results.values()) {
      if (position >= from && position < ends[wave]! && !resultEnded(result.status)) return false;
      position += 1;
    }
    return true;
  }

  private advanceWaves(): void {
    const waves = this.job.rollout?.waves;
    if (!waves) return;
    const ends = this.ends();
    while (this.wave < ends.length - 1 && this.waveDone(ends, this.wave)) {
      const index = this.wave;
      const wave = waves[index];
      const from = index === 0 ? 0 : ends[index - 1]!;
      const of = `wave ${index + 1} of ${ends.length}`;
      if (wave?.successRatio !== undefined) {
        const { finished, ended } = this.tally(from, ends[index]!);
        if (ended > 0 && finished / ended < wave.successRatio) {
          const ratio = `${finished} of ${ended} registers finished (${Math.round((100 * finished) / ended)}%), below the success ratio of ${Math.round(wave.successRatio * 100)}%`;
          this.stopAt(`${of} ended: ${ratio}; resume to send the next wave anyway`);
          return;
        }
      }
      if (wave?.pauseAfter === true) {
        this.stopAt(`${of} done, paused after it as asked; resume to send wave ${index + 2}`);
        return;
      }
      this.wave += 1;
      this.deps.save();
    }
  }

  /** The job pauses at a wave's end (resume opens the next wave). */
  private stopAt(reason: string): void {
    if (this.job.status === 'PAUSED' && this.job.pausedReason === reason) return;
    this.deps.onAudit('job_paused', `job ${this.job.jobId}: ${reason}`);
    this.pause(reason);
  }

  private tally(from: number, to: number): { finished: number; ended: number } {
    let finished = 0;
    let ended = 0;
    let position = 0;
    for (const result of this.results.values()) {
      if (position >= from && position < to && resultEnded(result.status)) {
        ended += 1;
        if (result.status === 'FINISHED') finished += 1;
      }
      position += 1;
    }
    return { finished, ended };
  }
}
