/**
 * Top self-time functions of a V8 .cpuprofile (`node --cpu-prof`): what the benchmarks' docs
 * quote when a goal is missed. `node bin/run-ts.js bench/profile-top.ts FILE [count]`.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function topSelfTime(
  profile: Profile,
  count: number,
): Array<{ name: string; where: string; ms: number; share: number }> {
  const byNode = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    byNode.set(id, (byNode.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFunction = new Map<string, { name: string; where: string; us: number }>();
  let total = 0;
  for (const node of profile.nodes) {
    const us = byNode.get(node.id) ?? 0;
    total += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url;
    const where = file ? `${file}:${lineNumber + 1}` : '';
    const key = `${functionName}@${where}`;
    const entry = byFunction.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    byFunction.set(key, entry);
  }
  return [...byFunction.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, count)
    .map((e) => ({ name: e.name, where: e.where, ms: Math.round(e.us / 1000), share: e.us / total }));
}

/** Self time by package (node_modules/<name>), by our own file, or by node internals. */
export function selfTimeByOwner(
  profile: Profile,
  count: number,
): Array<{ owner: string; ms: number; share: number }> {
  const rows = topSelfTime(profile, Number.MAX_SAFE_INTEGER);
  const owners = new Map<string, number>();
  let busy = 0;
  for (const row of rows) {
    if (row.name === '(idle)') continue;
    busy += row.ms;
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(row.where);
    const owner = match
      ? match[1]!
      : row.where.startsWith('node:')
        ? 'node internals'
        : row.where === ''
          ? row.name
          : row.where.replace(/:\d+$/, '');
    owners.set(owner, (owners.get(owner) ?? 0) + row.ms);
  }
  return [...owners.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([owner, ms]) => ({ owner, ms, share: ms / busy }));
}

if (process.argv[1]?.endsWith('profile-top.ts')) {
  const [file, count = '25', mode] = process.argv.slice(2);
  if (!file) {
    console.error('usage: profile-top.ts FILE.cpuprofile [count] [--by-owner]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  if (mode === '--by-owner') {
    for (const row of selfTimeByOwner(profile, Number(count))) {
      console.log(
        `${(row.share * 100).toFixed(1).padStart(5)}% of busy  ${String(row.ms).padStart(6)} ms  ${row.owner}`,
      );
    }
  } else {
    for (const row of topSelfTime(profile, Number(count))) {
      console.log(
        `${(row.share * 100).toFixed(1).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.name}  ${row.where}`,
      );
    }
  }
}
