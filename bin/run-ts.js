#!/usr/bin/env node
// Runs any TypeScript entry point (benchmarks, helper processes) through tsx.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const [entry, ...rest] = process.argv.slice(2);
if (!entry) {
  console.error('usage: run-ts.js <file.ts> [args...]');
  process.exit(2);
}
process.argv = [process.argv[0], resolve(entry), ...rest];
await import(pathToFileURL(resolve(entry)).href);
