/**
 * The nats-server configuration block of docs/topology.md ("NATS: the MQTT listener") is the one
 * this test starts, with free ports and a temporary store_dir put in: an MQTT client connects,
 * and a retained message is kept for a later subscriber. Skipped only without the binary.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { skipWithout } from '../support/binaries.ts';
import { program } from '../support/installed.ts';
import { TestClient } from '../support/mqtt.ts';
import { nodeConfig } from '../support/nats-cluster.ts';
import { freePort, waitForPort } from '../support/ports.ts';

/** The ```conf block that follows the heading. */
async function natsBlock(heading = '### NATS: the MQTT listener'): Promise<string> {
  const doc = await readFile(new URL('../../docs/topology.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf(heading));
  const block = /```conf\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`no conf block under "${heading}"`);
  return block;
}

describe('docs/topology.md: the NATS cluster node configuration', () => {
  it('is what the suite and the bench generate for each node (test/support/nats-cluster.ts)', async () => {
    const block = await natsBlock('### The configuration of each node');
    const generated = nodeConfig({
      name: 'nats-1',
      host: '0.0.0.0',
      dir: '/var/lib/nats',
      clientPort: 4222,
      clusterPort: 6222,
      mqttPort: 1883,
      monitorPort: 8222,
      routes: ['nats-1:6222', 'nats-2:6222', 'nats-3:6222'],
    });
    // The block's first line is a comment naming the file.
    expect(block.split('\n').slice(1).join('\n')).toBe(generated);
  });
});

// Skipped only outside CI when nats-server is missing; CI (.ci/run) installs it, so there it always runs.
describe.skipIf(skipWithout(['nats-server'], 'docs/topology.md: the nats-server MQTT block'))(
  'docs/topology.md: the nats-server MQTT block',
  () => {
    let child: ChildProcess | undefined;
    let dir: string | undefined;

    afterAll(async () => {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child?.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('starts as documented and keeps a retained message for a later subscriber', async () => {
      const block = await natsBlock();
      // The documented values, replaced by free ports and a temporary directory.
      expect(block).toContain('listen: 0.0.0.0:4222');
      expect(block).toMatch(/mqtt \{\s*port: 1883\s*\}/);
      expect(block).toContain('store_dir: "/var/lib/nats"');
      dir = await mkdtemp(join(tmpdir(), 'regbridge-nats-doc-'));
      const [clientPort, mqttPort] = [await freePort(), await freePort()];
      const config = block
        .replace('listen: 0.0.0.0:4222', `listen: 127.0.0.1:${clientPort}`)
        .replace(/port: 1883/, `port: ${mqttPort}`)
        .replace('"/var/lib/nats"', JSON.stringify(join(dir, 'js')));
      const file = join(dir, 'nats.conf');
      await writeFile(file, config);
      child = spawn(program('nats-server'), ['-c', file], { stdio: 'ignore' });
      await waitForPort(mqttPort);

      const url = `mqtt://127.0.0.1:${mqttPort}`;
      const publisher = await TestClient.connect(url, []);
      await publisher.publish('stores/042/devices/reg-01/state', '{"online":true}', { retain: true });
      await publisher.close();
      const late = await TestClient.connect(url, ['stores/042/devices/+/state']);
      try {
        const got = await late.waitFor(
          (m) => m.topic === 'stores/042/devices/reg-01/state',
          'the retained state',
        );
        expect(got.retain).toBe(true);
        expect(got.payload.toString()).toBe('{"online":true}');
      } finally {
        await late.close();
      }
    });
  },
);
