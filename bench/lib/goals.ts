/**
 * The performance goals of regbridge (docs/benchmarks.md): what `npm run bench` judges, each a
 * figure some scenario reports with a `goal`. Every other figure is information. A quick run
 * (CI) measures smaller sizes: it checks that every goal's figure exists and judges nothing.
 */
import type { Figure, ScenarioOutcome } from './types.ts';

export interface Goal {
  /** The goal in words, as docs/benchmarks.md states it. */
  text: string;
  scenario: string;
  /** Picks the goal's figure among the scenario's (the one carrying a goal). */
  figure: RegExp;
}

export const GOALS: readonly Goal[] = [
  {
    text: 'REST submit >= 0.45x bare fastify (requests/s)',
    scenario: 'rest-throughput',
    figure: /^POST \/api\/vendor-script/,
  },
  { text: '`serve` ready <= 4x `node -e 0`', scenario: 'footprint', figure: /start to \/health 200$/ },
  { text: '`serve` idle RSS <= 1.25x bare fastify', scenario: 'footprint', figure: /^serve .*idle RSS$/ },
  { text: 'device heap peak under floods <= 64 MiB', scenario: 'overload', figure: /heap max during floods/ },
  {
    text: '1,000 registers through aedes < 1 s (fan-out to last FINISHED)',
    scenario: 'fanout-scale',
    figure: /via aedes: time to last FINISHED$/,
  },
  {
    text: 'status p99 < 50 ms during a 500-register fan-out, fleet on its own core',
    scenario: 'status-under-load',
    figure: /via aedes.*task end to controller, p99$/,
  },
  {
    text: '1,000 registers through the controller service < 1 s',
    scenario: 'controller-service',
    figure: /job through the service/,
  },
  {
    text: 'head office: a fleet job to 10,000 registers in 500 stores through the 3-node hub < 10 s',
    scenario: 'head-office',
    figure: /via 3-node NATS hub: fleet job to every result$/,
  },
];

export interface GoalResult {
  goal: Goal;
  /** Absent when the scenario was not selected or did not finish. */
  figure?: Figure;
  status: 'met' | 'missed' | 'not run' | 'no figure' | 'shown (quick)';
}

export function judgeGoals(outcomes: readonly ScenarioOutcome[], quick: boolean): GoalResult[] {
  return GOALS.map((goal) => {
    const outcome = outcomes.find((o) => o.scenario === goal.scenario);
    if (outcome?.status !== 'ok') return { goal, status: 'not run' };
    const figure = outcome.figures.find((f) => f.goal !== undefined && goal.figure.test(f.figure));
    if (!figure) return { goal, status: 'no figure' };
    if (quick) return { goal, figure, status: 'shown (quick)' };
    return { goal, figure, status: figure.met === true ? 'met' : 'missed' };
  });
}

export function renderGoals(results: readonly GoalResult[]): string {
  const lines = results.map(({ goal, figure, status }) => {
    const head = `${status === 'met' ? 'MET   ' : status === 'missed' ? 'MISSED' : status.toUpperCase()}  ${goal.text}`;
    if (!figure) return head;
    const value = figure.value === null ? 'n/a' : `${figure.value} ${figure.unit}`;
    const ratio =
      figure.ratio === undefined ? '' : `, ${figure.ratio}x ${figure.baselineLabel ?? 'baseline'}`;
    return `${head}\n        ${value}${ratio}${figure.note ? ` (${figure.note.slice(0, 160)})` : ''}`;
  });
  return ['Performance goals:', ...lines].join('\n');
}
