/** What every benchmark scenario reports: one row of the printed table and of bench/results.json. */
export interface Figure {
  scenario: string;
  figure: string;
  /** The measured value; null only when the figure could not be measured (see note). */
  value: number | null;
  unit: string;
  /** What the value is compared with (the reference point), same unit as value. */
  baseline?: number;
  baselineLabel?: string;
  /** value / baseline, or baseline / value for "lower is better" figures (see ratioOf). */
  ratio?: number;
  /** The goal in words, e.g. "< 5 ms". */
  goal?: string;
  met?: boolean;
  note?: string;
}

export type ScenarioStatus = 'ok' | 'skipped' | 'crashed';

export interface ScenarioOutcome {
  scenario: string;
  status: ScenarioStatus;
  reason?: string;
  durationMs: number;
  figures: Figure[];
}

/** Messages from a scenario child process to bench/run.ts over the IPC channel. */
export type ScenarioMessage =
  | { type: 'figure'; figure: Figure }
  | { type: 'log'; text: string }
  | { type: 'skipped'; reason: string }
  | { type: 'done' }
  | { type: 'error'; message: string };

export interface ResultsFile {
  date: string;
  node: string;
  cpus: number;
  cpuModel: string;
  quick: boolean;
  durationMs: number;
  /** os.loadavg() before and after the run: other work on the machine skews every figure. */
  loadavg: { start: number[]; end: number[] };
  scenarios: Array<Omit<ScenarioOutcome, 'figures'>>;
  results: Figure[];
}
