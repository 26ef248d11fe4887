/**
 * Certificates for HTTPS (`serve`, `controller`: `--tls-cert FILE --tls-key FILE`) and private CAs
 * for clients (`--ca FILE`, `--mqtt-ca FILE`), read once at start with errors that name the flag.
 * Shared by every command that serves or calls HTTPS or MQTT over TLS (docs/security.md).
 */
import { readFileSync } from 'node:fs';

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export class TlsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFileError';
  }
}

function readPem(flag: string, path: string, kind: RegExp): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new TlsFileError(
      `${flag}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`,
    );
  }
  if (!kind.test(content.toString('latin1'))) {
    throw new TlsFileError(`${flag}: ${path} holds no PEM ${kind.source.replace(/\\/g, '')} block`);
  }
  return content;
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** `--tls-cert` and `--tls-key`: both or neither. */
export function loadTlsFiles(
  certPath: string | undefined,
  keyPath: string | undefined,
): TlsFiles | undefined {
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined) throw new TlsFileError('--tls-key: needs --tls-cert too');
  if (keyPath === undefined) throw new TlsFileError('--tls-cert: needs --tls-key too');
  return {
    cert: readPem('--tls-cert', certPath, CERTIFICATE),
    key: readPem('--tls-key', keyPath, PRIVATE_KEY),
  };
}

/** `--ca FILE` / `--mqtt-ca FILE`: the CA certificates (PEM, one or more) that clients trust. */
export function loadCaFile(flag: string, path: string | undefined): Buffer | undefined {
  return path === undefined ? undefined : readPem(flag, path, CERTIFICATE);
}
