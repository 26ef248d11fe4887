/**
 * PEM files for TLS (docs/security.md, "Deploying with TLS"): the certificate and key a server
 * answers HTTPS with (`serve`, `controller`: `--tls-cert FILE --tls-key FILE`) and the private
 * CAs clients trust (`--ca FILE`, `--mqtt-ca FILE`). Configuration checks them once with
 * pemProblem() (every problem reported at once); the command reads them at start.
 */
import { readFileSync } from 'node:fs';

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export type PemKind = 'CERTIFICATE' | 'PRIVATE KEY';

const MARKERS: Record<PemKind, RegExp> = {
  CERTIFICATE: /-----BEGIN CERTIFICATE-----/,
  'PRIVATE KEY': /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
};

/** Why `path` is not a readable PEM file with a `kind` block, or undefined when it is. */
export function pemProblem(path: string, kind: PemKind): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch (error) {
    return `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  return MARKERS[kind].test(text) ? undefined : `${path} holds no PEM ${kind} block`;
}

export function readPem(path: string): Buffer {
  return readFileSync(path);
}

/** The server's certificate and key, or undefined for plain HTTP. */
export function loadTlsFiles(
  certPath: string | undefined,
  keyPath: string | undefined,
): TlsFiles | undefined {
  if (certPath === undefined || keyPath === undefined) return undefined;
  return { cert: readPem(certPath), key: readPem(keyPath) };
}
