/**
 * The DeviceClient's bearer token (docs/api.md, "Authentication"): fetched lazily by the first
 * call, shared by concurrent first calls, and renewed once after a 401 (token expiry) by all the
 * calls that met the same expired token. Without credentials no Authorization header is sent.
 */
import {
  errorFromResponse,
  type HttpRequest,
  type HttpResponse,
  type HttpTransport,
  parseBody,
} from './http.ts';
import { tokenSchema } from './types.ts';

export interface Credentials {
  userName: string;
  password: string;
}

export class TokenSession {
  private token: string | undefined;
  private authenticating: Promise<string> | undefined;

  constructor(
    private readonly http: HttpTransport,
    private readonly credentials: Credentials | undefined,
    /** The vendor's client sends GET with a JSON body; undici's request allows that (fetch does not). */
    private readonly authMethod: 'GET' | 'POST',
  ) {}

  /** One API call with the bearer token; after a 401 the token is renewed and the call sent once more. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    if (!this.credentials) return this.http.send(req);
    const token = await this.currentToken();
    const res = await this.http.send(withToken(req, token));
    if (res.statusCode !== 401) return res;
    return this.http.send(withToken(req, await this.renewToken(token)));
  }

  /** Fetches a fresh token now. No-op without credentials. */
  async renew(): Promise<void> {
    if (!this.credentials) return;
    this.token = undefined;
    await this.currentToken();
  }

  /** Concurrent first calls share one authentication. */
  private currentToken(): Promise<string> {
    if (this.token) return Promise.resolve(this.token);
    this.authenticating ??= this.fetchToken().finally(() => {
      this.authenticating = undefined;
    });
    return this.authenticating;
  }

  /** Several calls that met the same expired token renew it once. */
  private renewToken(stale: string): Promise<string> {
    if (this.token === stale) this.token = undefined;
    return this.currentToken();
  }

  private async fetchToken(): Promise<string> {
    const credentials = this.credentials!;
    const res = await this.http.send({
      method: this.authMethod,
      path: '/api/authenticate',
      body: { userName: credentials.userName, password: credentials.password },
    });
    if (res.statusCode !== 200) throw errorFromResponse(res);
    const { token } = parseBody(tokenSchema, res);
    this.token = token;
    return token;
  }
}

function withToken(req: HttpRequest, token: string): HttpRequest {
  return { ...req, headers: { ...req.headers, authorization: `Bearer ${token}` } };
}
