import { randomBytes, randomInt } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ApiError, type ChatClient, createClient, type TokenPair } from '@chat/client';
import { GatewayClient, type IsolatedPlatform, type ServiceProcess, startIsolatedPlatform } from '@chat/testkit';
import { afterAll, inject } from 'vitest';
import { E2E_ENV } from '../setup/platform.ts';

export const gateway = inject('platform').urls.gateway;

/**
 * The sockets a test file opens, closed after its tests: `connect` opens one from the user's client
 * IP (a fresh one without a user), `identified` also identifies it with the user's token.
 */
export function fileSockets() {
  const sockets: GatewayClient[] = [];
  afterAll(() => {
    for (const socket of sockets) socket.close();
  });
  async function connect(user?: TestUser): Promise<GatewayClient> {
    const socket = await GatewayClient.connect(gateway, { ip: user?.ip ?? randomIp() });
    sockets.push(socket);
    return socket;
  }
  async function identified(user: TestUser): Promise<GatewayClient> {
    const socket = await connect(user);
    await socket.identify(user.token);
    return socket;
  }
  return { connect, identified };
}

/**
 * A platform of the test file's own (for a file that kills, cuts off or adds processes), with the
 * e2e settings and `env` on top of them per process; its logs in the shared log dir under `logName`.
 */
export function ownPlatform(
  label: string,
  logName: string,
  env: Partial<Record<ServiceProcess, Record<string, string>>> = {},
): Promise<IsolatedPlatform> {
  const processes = new Set([...Object.keys(E2E_ENV), ...Object.keys(env)]) as Set<ServiceProcess>;
  return startIsolatedPlatform({
    backing: inject('backing'),
    label,
    logDir: join(inject('platform').logDir, logName),
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' },
    extraEnv: Object.fromEntries([...processes].map((p) => [p, { ...E2E_ENV[p], ...env[p] }])),
  });
}

/**
 * A client IP of its own per call site: the gateway trusts 127.0.0.1 as a proxy in the e2e
 * platform, so each test user gets its own rate-limit windows and tests never starve each other.
 */
export function randomIp(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

export interface TestUser {
  id: string;
  username: string;
  email: string;
  password: string;
  token: string;
  refreshToken: string;
  ip: string;
}

/** Registers a fresh user through the gateway (email verification is off in the e2e platform). */
export async function newUser(prefix = 'u'): Promise<TestUser> {
  const username = `${prefix}_${randomBytes(5).toString('hex')}`;
  const email = `${username}@example.test`;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const ip = randomIp();
  const res = await fetch(`${gateway}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: JSON.stringify({ username, email, password }),
  });
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { token: string; refreshToken: string; user: { id: string } };
  return { id: body.user.id, username, email, password, token: body.token, refreshToken: body.refreshToken, ip };
}

/** A JSON call through the gateway as `user` (or anonymously), from the user's own client IP. */
export async function api(
  method: string,
  path: string,
  options: { user?: Pick<TestUser, 'token' | 'ip'>; body?: unknown; ip?: string; headers?: Record<string, string>; base?: string } = {},
) {
  const headers: Record<string, string> = { 'x-forwarded-for': options.ip ?? options.user?.ip ?? randomIp(), ...options.headers };
  if (options.user) headers.authorization = `Bearer ${options.user.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${options.base ?? gateway}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : undefined };
}

/**
 * A request to the gateway sent as written: the request target reaches it unnormalised (fetch would
 * resolve it), and a body goes out in 64 KiB writes with no Content-Length (chunked).
 */
export function rawRequest(
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const { hostname, port } = new URL(gateway);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    for (let i = 0; bytes && i < bytes.length; i += 65_536) req.write(bytes.subarray(i, i + 65_536));
    req.end();
  });
}

/** One answer read off a raw connection: its status, its headers (names in lower case) and its body as text. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/**
 * Bytes written to the gateway on a connection of their own, for framing that no HTTP client sends
 * (pipelined requests, conflicting lengths, a body that stops), and the final answers read back.
 * Reading stops when the gateway closes the connection, once `answers` answers are complete, or
 * after `waitMs`; the socket is destroyed in every case.
 */
export function rawExchange(
  bytes: string | Buffer,
  options: { answers?: number; waitMs?: number } = {},
): Promise<{ answers: RawAnswer[]; closed: boolean }> {
  const { hostname, port } = new URL(gateway);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let stream = '';
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers: parseAnswers(stream), closed });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 2_000);
    socket.once('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      stream += chunk.toString('latin1');
      if (options.answers !== undefined && parseAnswers(stream).length >= options.answers) finish(false);
    });
    // A reset after the answers still ends the exchange; one before any byte arrived is a failure.
    socket.once('error', (err) => {
      if (stream) return finish(true);
      clearTimeout(timer);
      reject(err);
    });
    socket.once('close', () => finish(true));
  });
}

/** The complete final answers in a raw HTTP/1.1 byte stream, in order (1xx interim answers left out). */
export function parseAnswers(stream: string): RawAnswer[] {
  const found: RawAnswer[] = [];
  let rest = stream;
  while (rest.startsWith('HTTP/1.')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    rest = rest.slice(headEnd + 4);
    if (status < 200) continue;
    const body = takeBody(rest, status, headers);
    if (!body) break;
    found.push({ status, headers, text: body.text });
    rest = body.rest;
  }
  return found;
}

/** The body of an answer at the start of `rest` and what follows it; undefined while it is incomplete. */
function takeBody(rest: string, status: number, headers: Record<string, string>): { text: string; rest: string } | undefined {
  if (status === 204 || status === 304) return { text: '', rest };
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return rest.length < length ? undefined : { text: rest.slice(0, length), rest: rest.slice(length) };
  }
  if (!/chunked/i.test(headers['transfer-encoding'] ?? '')) return { text: rest, rest: '' };
  let text = '';
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (size === 0) {
      const trailerEnd = rest.indexOf('\r\n\r\n', lineEnd);
      return trailerEnd < 0 ? undefined : { text, rest: rest.slice(trailerEnd + 4) };
    }
    if (rest.length < lineEnd + 2 + size + 2) return undefined;
    text += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}

/** Opens (or finds) the pair's conversation once social's read-model has heard of `other` from auth. */
export async function conversationOnceKnown(user: TestUser, other: TestUser): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await api('POST', '/v1/dm/conversations', { user, body: { userIds: [other.id] } });
    if (res.status === 200 || res.status === 201) return res.body.id;
    if (res.status !== 404 || Date.now() > deadline) throw new Error(`conversation answered ${res.status}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A public server of `owner` that `members` joined, with the text and voice channels every new server has. */
export async function publicServer(
  owner: TestUser,
  members: TestUser[] = [],
  settings: Record<string, unknown> = {},
): Promise<{ serverId: string; textId: string; voiceId: string }> {
  const created = await api('POST', '/v1/servers', {
    user: owner,
    body: { name: `srv ${randomBytes(3).toString('hex')}`, isPublic: true, ...settings },
  });
  if (created.status !== 201) throw new Error(`server creation answered ${created.status}: ${JSON.stringify(created.body)}`);
  const serverId = created.body.id as string;
  for (const user of members) {
    const joined = await api('POST', `/v1/servers/${serverId}/join`, { user });
    if (joined.status !== 200) throw new Error(`join answered ${joined.status}: ${JSON.stringify(joined.body)}`);
  }
  const channels = (await api('GET', `/v1/servers/${serverId}/channels`, { user: owner })).body as { id: string; channelType: string }[];
  const of = (type: string) => channels.find((c) => c.channelType === type)?.id as string;
  return { serverId, textId: of('text'), voiceId: of('voice') };
}

/** Posts `content` in a channel as `user` (from `ip` when given) and answers the message id. */
export async function postMessage(user: TestUser, channelId: string, content: string, options: { replyToId?: string; ip?: string } = {}) {
  const body = { content, ...(options.replyToId && { replyToId: options.replyToId }) };
  const res = await api('POST', `/v1/channels/${channelId}/messages`, { user, body, ip: options.ip });
  if (res.status !== 201) throw new Error(`post answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** A @chat/client of one client IP that remembers the status and headers of the last answer it got. */
export interface RecordingClient {
  client: ChatClient;
  /** The status of the answer the last call ended with (its typed result does not carry it). */
  status(): number | undefined;
  headers(): Headers | undefined;
}

/**
 * A client from `ip` (signed in with `tokens` when given). No retries: a test sees a 429 or a 503
 * as the gateway answered it, as with raw fetch.
 */
export function recordingClient(ip = randomIp(), tokens?: TokenPair): RecordingClient {
  let last: { status: number; headers: Headers } | undefined;
  const client = createClient({
    baseUrl: gateway,
    headers: { 'x-forwarded-for': ip },
    tokens,
    maxRetries: 0,
    onResponse: (answer) => {
      last = answer;
    },
  });
  return { client, status: () => last?.status, headers: () => last?.headers };
}

export type ClientUser = TestUser & RecordingClient;

/** A fresh user (newUser) with a recording client of its own, signed in. */
export async function newClientUser(prefix = 'u'): Promise<ClientUser> {
  const user = await newUser(prefix);
  return { ...user, ...recordingClient(user.ip, { token: user.token, refreshToken: user.refreshToken }) };
}

/** The ApiError a call fails with; throws when the call succeeds. */
export async function failure(pending: Promise<unknown>): Promise<ApiError> {
  const outcome = await pending.then(
    (value) => ({ failed: false as const, value }),
    (error: unknown) => ({ failed: true as const, error }),
  );
  if (!outcome.failed) throw new Error(`expected the call to fail; it answered ${JSON.stringify(outcome.value)}`);
  if (!(outcome.error instanceof ApiError)) throw outcome.error;
  return outcome.error;
}

/**
 * The status a call of `caller` ends with, and its result or its ApiError: for polling a call that
 * fails until something happens elsewhere (an event reaching a read-model).
 */
export async function attempt<T>(
  caller: RecordingClient,
  call: (client: ChatClient) => Promise<T>,
): Promise<{ status: number; value?: T; error?: ApiError }> {
  try {
    const value = await call(caller.client);
    return { status: caller.status() as number, value };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.status, error: err };
  }
}
