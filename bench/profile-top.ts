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

export function topSelfTime(profile: Profile, count: number): Array<{ name: string; where: string; ms: number; share: number }> {
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

if (process.argv[1]?.endsWith('profile-top.ts')) {
  const [file, count = '25'] = process.argv.slice(2);
  if (!file) {
    console.error('usage: profile-top.ts FILE.cpuprofile [count]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  for (const row of topSelfTime(profile, Number(count))) {
    console.log(`${(row.share * 100).toFixed(1).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.name}  ${row.where}`);
  }
}
