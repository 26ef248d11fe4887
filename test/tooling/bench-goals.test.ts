/**
 * What `npm run bench` says of each performance goal (bench/lib/goals.ts): met or missed from the
 * figure that carries the goal, only shown in a quick run, and a missing figure named, which is
 * what makes the run fail in CI.
 */
import { describe, expect, it } from 'vitest';
import { GOALS, judgeGoals, renderGoals } from '../../bench/lib/goals.ts';
import type { Figure, ScenarioOutcome } from '../../bench/lib/types.ts';

const figure = (scenario: string, name: string, extra: Partial<Figure>): Figure => ({
  scenario,
  figure: name,
  value: 1,
  unit: 'ms',
  ...extra,
});

function outcomes(met: boolean): ScenarioOutcome[] {
  const of = (scenario: string, figures: Figure[]): ScenarioOutcome => ({
    scenario,
    status: 'ok',
    durationMs: 1,
    figures,
  });
  const goal = { goal: 'g', met };
  return [
    of('rest-throughput', [figure('rest-throughput', 'POST /api/vendor-script (auth, simulator)', goal)]),
    of('footprint', [
      // The baseline's figure has the same name pattern but no goal: it must not be taken.
      figure('footprint', 'bare fastify: start to /health 200', {}),
      figure('footprint', 'serve (embedded broker): start to /health 200', goal),
      figure('footprint', 'serve (embedded broker): idle RSS', goal),
    ]),
    of('overload', [figure('overload', 'device heap max during floods', goal)]),
    of('fanout-scale', [figure('fanout-scale', 'N=1,000 full via aedes: time to last FINISHED', goal)]),
    of('status-under-load', [
      figure(
        'status-under-load',
        '500 registers via aedes, fleet on its own cores: task end to controller, p99',
        goal,
      ),
    ]),
    of('controller-service', [figure('controller-service', 'N=1000 job through the service (POST)', goal)]),
    of('head-office', [
      figure(
        'head-office',
        'head office, 500 stores x 20 via 3-node NATS hub: fleet job to every result',
        goal,
      ),
    ]),
  ];
}

describe('the performance goals of npm run bench', () => {
  it('judges every goal from the figure that carries it', () => {
    expect(judgeGoals(outcomes(true), false).map((r) => r.status)).toEqual(GOALS.map(() => 'met'));
    expect(judgeGoals(outcomes(false), false).map((r) => r.status)).toEqual(GOALS.map(() => 'missed'));
    const footprint = judgeGoals(outcomes(true), false).find((r) => r.goal.scenario === 'footprint');
    expect(footprint?.figure?.figure).toBe('serve (embedded broker): start to /health 200');
  });

  it('only shows the figures of a quick run', () => {
    expect(new Set(judgeGoals(outcomes(false), true).map((r) => r.status))).toEqual(
      new Set(['shown (quick)']),
    );
  });

  it('names a goal whose scenario ran without its figure, and one whose scenario did not run', () => {
    const all = outcomes(true);
    all[2] = { ...all[2]!, figures: [] };
    all[3] = { ...all[3]!, status: 'crashed' };
    const results = judgeGoals(all, false);
    expect(results.filter((r) => r.status === 'no figure').map((r) => r.goal.scenario)).toEqual(['overload']);
    expect(results.filter((r) => r.status === 'not run').map((r) => r.goal.scenario)).toEqual([
      'fanout-scale',
    ]);
    expect(renderGoals(results)).toContain('NO FIGURE  device heap peak under floods <= 64 MiB');
  });
});
