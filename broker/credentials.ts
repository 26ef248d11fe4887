/**
 * Who a connecting client of the store broker is (docs/broker.md, "Connecting"): a device by its
 * client certificate's CN, an anonymous controller where allowed, or a user by password, with
 * failed logins limited as for REST (src/auth/login-throttle.ts). A refusal carries its CONNACK code.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import type { AuthenticateError, Client } from 'aedes';
import { ID_PATTERN } from '../bridge/contract/topics.ts';
import type { LoginThrottle } from '../src/auth/login-throttle.ts';
import type { BrokerRole, UserDirectory } from './users.ts';

export interface Identity {
  /** The user name; '' for an anonymous client. */
  name: string;
  role: BrokerRole;
  anonymous: boolean;
  /** How it logged in: a reload of the users drops password clients whose entry changed. */
  via: 'password' | 'certificate' | 'anonymous';
}

// CONNACK return codes, [MQTT-3.2.2-3] table 3.1.
export const IDENTIFIER_REJECTED = 2;
export const SERVER_UNAVAILABLE = 3;
export const BAD_USER_NAME_OR_PASSWORD = 4;
export const NOT_AUTHORIZED = 5;

export function refusal(returnCode: 2 | 3 | 4 | 5, message: string): AuthenticateError {
  return Object.assign(new Error(message), { name: 'ConnectRefused', returnCode }) as AuthenticateError;
}

export interface IdentifyOptions {
  users: UserDirectory;
  allowAnonymous: boolean;
  logins: LoginThrottle;
}

/** The client's identity from its certificate or credentials, or the refusal to answer with. */
export async function identify(
  client: Client,
  username: string | undefined,
  password: Buffer | undefined,
  options: IdentifyOptions,
): Promise<Identity | AuthenticateError> {
  const certificate = deviceCertificate(client);
  if (certificate !== undefined) {
    // A client certificate verified against --client-ca: the device named by its CN, no password.
    if (!ID_PATTERN.test(certificate)) {
      return refusal(NOT_AUTHORIZED, `certificate CN ${JSON.stringify(certificate)} is not a device id`);
    }
    if (username !== undefined && username !== '' && username !== certificate) {
      return refusal(NOT_AUTHORIZED, 'user name differs from the certificate CN');
    }
    return { name: certificate, role: 'device', anonymous: false, via: 'certificate' };
  } else if (username === undefined || username === '') {
    if (password !== undefined) return refusal(BAD_USER_NAME_OR_PASSWORD, 'password without user name');
    // Anonymous clients are controllers when allowed (docs/broker.md).
    if (!options.allowAnonymous) return refusal(NOT_AUTHORIZED, 'anonymous connections are not allowed');
    return { name: '', role: 'controller', anonymous: true, via: 'anonymous' };
  } else {
    const address = addressOf(client);
    // Refused without looking at the password, and not counted: guesses then learn nothing.
    const refused = options.logins.refusal(address, username);
    if (refused) {
      const what = refused.by === 'address' ? 'address' : 'user name from this address';
      return refusal(SERVER_UNAVAILABLE, `too many failed logins for this ${what}, try later`);
    }
    const user = await options.users.verify(username, password);
    if (!user) {
      options.logins.failure(address, username);
      return refusal(BAD_USER_NAME_OR_PASSWORD, 'unknown user or wrong password');
    }
    options.logins.success(address, username);
    return { name: user.name, role: user.role, anonymous: false, via: 'password' };
  }
}

/**
 * The CN of a client certificate the TLS listener verified against --client-ca; undefined for
 * plain TCP, WebSocket, or TLS without a (verified) certificate.
 */
function deviceCertificate(client: Client): string | undefined {
  const conn = (client as unknown as { conn?: unknown }).conn;
  if (!(conn instanceof TLSSocket) || !conn.authorized) return undefined;
  const subject = conn.getPeerCertificate()?.subject as { CN?: string | string[] } | undefined;
  const cn = subject?.CN;
  return typeof cn === 'string' ? cn : undefined;
}

/** The peer's address: a TCP or TLS socket, or the HTTP request of a WebSocket. */
export function addressOf(client: Client): string | undefined {
  const { conn, req } = client as unknown as {
    conn?: { remoteAddress?: string };
    req?: { socket?: { remoteAddress?: string } };
  };
  return conn?.remoteAddress ?? req?.socket?.remoteAddress;
}

export class LoginNameLog {
  /** Key of the user-name digests in log lines; per process, so a digest cannot be brute-forced. */
  readonly #key = randomBytes(32);
  readonly #users: () => UserDirectory;

  constructor(users: () => UserDirectory) {
    this.#users = users;
  }

  /**
   * A refused login's user name as a log line may carry it (docs/security.md, "Store broker"):
   * a configured user's name as it is; anything else only as a keyed digest, equal for equal names
   * while the broker runs, because it may be a password typed into the user name field.
   */
  fields(username: string | undefined): { user: string } | { userNameDigest: string } | undefined {
    if (username === undefined || username === '') return undefined;
    if (this.#users().get(username)) return { user: username };
    return {
      userNameDigest: createHmac('sha256', this.#key).update(username, 'utf8').digest('hex').slice(0, 16),
    };
  }
}
