/**
 * A private PKI made by the test itself with openssl (EC P-256, in a temporary directory): a CA,
 * a server certificate for 127.0.0.1/localhost, client certificates signed by it (one expired),
 * and a second, unrelated CA with a client certificate of its own.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Pem {
  cert: Buffer;
  key: Buffer;
  certPath: string;
  keyPath: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function pem(dir: string, name: string): Pem {
  const certPath = join(dir, `${name}.pem`);
  const keyPath = join(dir, `${name}.key`);
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), certPath, keyPath };
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export class TestPki {
  readonly dir = mkdtempSync(join(tmpdir(), 'regbridge-pki-'));

  /** A self-signed CA. */
  ca(name: string): Pem {
    openssl(this.dir, [
      'req',
      '-x509',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-subj',
      `/CN=${name}`,
      '-days',
      '2',
    ]);
    return pem(this.dir, name);
  }

  /** A certificate for `cn` signed by `ca`; `days` -1 makes one that has already expired. */
  issue(ca: string, name: string, cn: string, options: { days?: number; server?: boolean } = {}): Pem {
    const san = options.server ? ['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'] : [];
    openssl(this.dir, [
      'req',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${cn}`,
      ...san,
    ]);
    openssl(this.dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-set_serial',
      String(Math.floor(Math.random() * 1e9)),
      '-days',
      String(options.days ?? 2),
      '-copy_extensions',
      'copy',
      '-out',
      `${name}.pem`,
    ]);
    return pem(this.dir, name);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
