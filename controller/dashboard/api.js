// The controller's HTTP API with the session's bearer token (docs/controller.md, "HTTP API").
import { state } from './state.js';

export class Unauthorized extends Error {}

export async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: {
      ...(state.token && { authorization: `Bearer ${state.token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const data = response.headers.get('content-type')?.includes('json') ? await response.json() : undefined;
  if (response.status === 401 && path !== '/api/authenticate') throw new Unauthorized();
  if (!response.ok)
    throw new Error(data?.message ? `${data.code}: ${data.message}` : `HTTP ${response.status}`);
  return data;
}
