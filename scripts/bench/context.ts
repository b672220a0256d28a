import { randomBytes } from 'node:crypto';
import type { ServiceProcess } from '@chat/testkit';
import type { BenchContext, BenchUser } from './scenario.ts';

/** The setup client of the scenarios: JSON calls through the gateway, each from the next client IP. */
export function createContext(
  urls: Record<ServiceProcess, string>,
  databases: BenchContext['databases'],
  nextClientIp: () => string,
): BenchContext {
  const api: BenchContext['api'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { 'x-forwarded-for': nextClientIp() };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${options.base ?? urls.gateway}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? parseJson(text) : undefined };
  };

  const registerUser = async (prefix = 'bench'): Promise<BenchUser> => {
    const username = `${prefix}_${randomBytes(5).toString('hex')}`;
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const res = await api('POST', '/v1/auth/register', { body: { username, email: `${username}@bench.test`, password } });
    if (res.status !== 201) throw new Error(`POST /v1/auth/register answered ${res.status}: ${JSON.stringify(res.body)}`);
    return { id: res.body.user.id, username, password, token: res.body.token };
  };

  return { urls, databases, api, registerUser };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
