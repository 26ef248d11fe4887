/**
 * Where a V8 sampling heap profile (.heapprofile: `node --heap-prof`, or the overload scenario's
 * BENCH_HEAP_PROF_DIR, which keeps collected objects too, so it shows allocation) says the bytes
 * were allocated: top functions by self size, by owner (package, our file, node internals), or by
 * the first frame of ours or of a package on the stack (`--by-caller`: who made node internals
 * allocate). `node bin/run-ts.js bench/heap-profile-top.ts FILE [count] [--by-owner|--by-caller]`.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  id: number;
  children: HeapNode[];
}

interface HeapProfile {
  head: HeapNode;
}

function where(node: HeapNode): string {
  const { url, lineNumber } = node.callFrame;
  const file = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url;
  return file ? `${file}:${lineNumber + 1}` : '';
}

function ownerOf(at: string, name: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(at);
  if (match) return match[1]!;
  if (at.startsWith('node:')) return 'node internals';
  if (at === '') return name || '(native)';
  return at.replace(/:\d+$/, '');
}

type Row = { key: string; bytes: number };

export function heapRows(
  profile: HeapProfile,
  mode: 'function' | 'owner' | 'caller',
): { rows: Row[]; total: number } {
  const sums = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode, stack: HeapNode[]): void => {
    stack.push(node);
    if (node.selfSize > 0) {
      total += node.selfSize;
      const name = node.callFrame.functionName || '(anonymous)';
      let key: string;
      if (mode === 'function') key = `${name}  ${where(node)}`;
      else if (mode === 'owner') key = ownerOf(where(node), node.callFrame.functionName);
      else {
        // The innermost frame that is not node internals or native: who asked for it.
        let caller: HeapNode | undefined;
        for (let i = stack.length - 1; i >= 0; i -= 1) {
          const at = where(stack[i]!);
          if (at !== '' && !at.startsWith('node:')) {
            caller = stack[i];
            break;
          }
        }
        key = caller ? `${caller.callFrame.functionName || '(anonymous)'}  ${where(caller)}` : '(no caller)';
      }
      sums.set(key, (sums.get(key) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child, stack);
    stack.pop();
  };
  visit(profile.head, []);
  const rows = [...sums.entries()].map(([key, bytes]) => ({ key, bytes })).sort((a, b) => b.bytes - a.bytes);
  return { rows, total };
}

if (process.argv[1]?.endsWith('heap-profile-top.ts')) {
  const [file, count = '25', flag] = process.argv.slice(2);
  if (!file) {
    console.error('usage: heap-profile-top.ts FILE.heapprofile [count] [--by-owner|--by-caller]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as HeapProfile;
  const mode = flag === '--by-owner' ? 'owner' : flag === '--by-caller' ? 'caller' : 'function';
  const { rows, total } = heapRows(profile, mode);
  console.log(`${(total / 2 ** 20).toFixed(1)} MiB sampled`);
  for (const row of rows.slice(0, Number(count))) {
    console.log(
      `${((row.bytes / total) * 100).toFixed(1).padStart(5)}%  ${(row.bytes / 2 ** 20).toFixed(1).padStart(7)} MiB  ${row.key}`,
    );
  }
}
