/**
 * The repository's docs are its users' reference (issue 13 item 4): nothing points at a page
 * users do not have, docs/api.md names every REST route and every error code the device answers
 * with, and docs/mqtt.md names every topic the device and the controller use.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../bridge/contract/topics.ts';
import { errorRegistry, hasHttpStatus } from '../src/errors.ts';
import { ROOT } from './support/controller-cli.ts';
import { startTestApp, type TestApp } from './support/http.ts';

const read = (file: string): string => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('no reference to a document users do not have', () => {
  it('README, docs, code and tests cite docs/*.md, never the internal contract page or its sections', () => {
    // Built from pieces so this file does not match itself.
    const forbidden = [
      ['contract', 'section'].join(' '),
      ['shared', 'contract'].join('/'),
      `contract${'.md'}`,
    ];
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((file) => /\.(md|ts|js|mjs|java|ya?ml|json)$/.test(file) || file === 'Dockerfile');
    const hits: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = read(file);
      } catch {
        continue; // deleted in the work tree
      }
      for (const word of forbidden) {
        const index = text.toLowerCase().indexOf(word);
        if (index >= 0) hits.push(`${file}: ...${text.slice(Math.max(0, index - 30), index + 40)}...`);
      }
    }
    expect(hits).toEqual([]);
  });
});

describe('docs/api.md is the REST reference', () => {
  let t: TestApp;
  let paths: Record<string, Record<string, unknown>>;
  const api = read('docs/api.md');

  beforeAll(async () => {
    t = await startTestApp();
    paths = ((await t.app.inject({ url: '/openapi.json' })).json() as { paths: typeof paths }).paths;
  });
  afterAll(() => t.close());

  it('names every route the device serves, method and path', () => {
    const routes = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const missing = routes.filter((route) => !api.includes(route));
    expect(missing, 'routes missing from docs/api.md').toEqual([]);
  });

  it('names every error code a REST route can answer', () => {
    const codes = Object.keys(errorRegistry).filter((code) =>
      hasHttpStatus(code as keyof typeof errorRegistry),
    );
    const controller = read('docs/controller.md');
    // The controller service answers its own codes, documented in docs/controller.md.
    const missing = codes.filter(
      (code) => !api.includes(`\`${code}\``) && !controller.includes(`\`${code}\``),
    );
    expect(missing, 'error codes missing from docs/api.md').toEqual([]);
  });
});

describe('docs/mqtt.md is the MQTT reference', () => {
  it('names every topic and subscription filter the device and the controller use', () => {
    const mqtt = read('docs/mqtt.md');
    // Built with markers, then written the way the docs write them.
    const shown = (topic: string): string =>
      topic
        .replaceAll('NSX', '<ns>')
        .replaceAll('DEVX', '<deviceId>')
        .replaceAll('GRPX', '<group>')
        .replaceAll('REQX', '<requestId>')
        .replaceAll('424242', '<id>');
    const used = Object.entries(topics).map(([name, build]) => {
      const topic = (build as (...args: unknown[]) => string)(
        'NSX',
        name.startsWith('group') ? 'GRPX' : 'DEVX',
        name === 'deviceReply' ? 'REQX' : 424242,
      );
      return shown(topic);
    });
    expect(used).toContain('<ns>/devices/<deviceId>/tasks/<id>/status');
    const missing = used.filter((topic) => !mqtt.includes(`\`${topic}\``));
    expect(missing, 'topics missing from docs/mqtt.md').toEqual([]);
  });
});
