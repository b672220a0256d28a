import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { api, newUser, publicServer, randomIp, rawExchange, rawRequest } from './helpers.ts';

const { logDir } = inject('platform');

/** Request lines and headers joined as HTTP/1.1 writes them, then the body as is. */
const http = (lines: string[], body = '') => `${lines.join('\r\n')}\r\n\r\n${body}`;
const json = (text: string) => (text ? JSON.parse(text) : undefined);
const wrongLogin = JSON.stringify({ login: 'nobody_edge_protocol', password: 'wrong password' });

/**
 * Whether auth received a request with this X-Request-Id. Auth logs every request it gets under
 * that id; once a request sent afterwards is in its log, every earlier line has been written.
 */
async function authReceived(requestId: string): Promise<boolean> {
  const marker = `edge-marker-${randomUUID()}`;
  expect((await api('GET', '/v1/auth/jwks', { headers: { 'x-request-id': marker } })).status).toBe(200);
  const log = () => readFileSync(join(logDir, 'auth.log'), 'utf8');
  const deadline = Date.now() + 2_000;
  while (!log().includes(`"reqId":"${marker}"`)) {
    if (Date.now() > deadline) throw new Error('auth did not log a request sent to it within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return log().includes(`"reqId":"${requestId}"`);
}

describe('paths the gateway classifies', () => {
  it('refuses a path with a backslash with 400, and the webhook it spells is not executed', async () => {
    const owner = await newUser('edgeslash');
    const { textId } = await publicServer(owner);
    const created = await api('POST', `/v1/channels/${textId}/webhooks`, { user: owner, body: { name: 'Slash bot' } });
    expect(created.status).toBe(201);
    const { id, token } = created.body as { id: string; token: string };
    const execute = (path: string, content: string) =>
      rawRequest('POST', path, { 'content-type': 'application/json', 'x-forwarded-for': randomIp() }, JSON.stringify({ content }));

    const slashed = await execute(`/v1/webhooks/${id}\\${token}`, 'through a backslash');
    expect({ status: slashed.status, body: json(slashed.text) }).toEqual({
      status: 400,
      body: { error: 'The path may not contain a backslash' },
    });
    expect((await execute(`/v1/webhooks/${id}/${token}`, 'through a slash')).status).toBe(204);
    const messages = await api('GET', `/v1/channels/${textId}/messages`, { user: owner });
    expect(messages.body.map((m: { content: string }) => m.content)).toEqual(['through a slash']);
  });

  it('classifies /v1/%61uth/… as /v1/auth: it asks for a token and counts in the Auth tier', async () => {
    const outcome = async (path: string) => {
      const res = await rawRequest('GET', path, { 'x-forwarded-for': randomIp() });
      return { status: res.status, body: json(res.text), limit: res.headers['x-ratelimit-limit'] };
    };
    const expected = { status: 401, body: { error: 'Missing bearer token' }, limit: '5' };
    expect(await outcome('/v1/auth/no-such-endpoint')).toEqual(expected);
    expect(await outcome('/v1/%61uth/no-such-endpoint')).toEqual(expected);
  });
});

describe('request bodies and connection headers', () => {
  it('answers 408 to a body that stops arriving, and the service never receives the request', { timeout: 15_000 }, async () => {
    const requestId = `edge-stalled-${randomUUID()}`;
    const head = [
      'POST /v1/auth/login HTTP/1.1',
      'Host: gateway',
      `X-Forwarded-For: ${randomIp()}`,
      `X-Request-Id: ${requestId}`,
      'Content-Type: application/json',
      `Content-Length: ${wrongLogin.length}`,
    ];
    // BODY_IDLE_TIMEOUT_MS is 10 s in the e2e platform.
    const { answers } = await rawExchange(http(head, wrongLogin.slice(0, 10)), { answers: 1, waitMs: 12_500 });
    expect(answers.map((a) => ({ status: a.status, body: json(a.text) }))).toEqual([
      { status: 408, body: { error: 'The request body stopped arriving' } },
    ]);
    expect(await authReceived(requestId)).toBe(false);
  });

  it('forwards a request sent with Expect: 100-continue, a JSON body or a multipart upload alike', async () => {
    const login = await rawRequest(
      'POST',
      '/v1/auth/login',
      {
        'content-type': 'application/json',
        'content-length': String(wrongLogin.length),
        expect: '100-continue',
        'x-forwarded-for': randomIp(),
      },
      wrongLogin,
    );
    expect({ status: login.status, body: json(login.text) }).toEqual({ status: 401, body: { error: 'Wrong login or password' } });

    const user = await newUser('edgeexpect');
    const boundary = 'edge-protocol-boundary';
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`;
    const upload = await rawRequest(
      'POST',
      '/v1/media',
      {
        authorization: `Bearer ${user.token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(form.length),
        expect: '100-continue',
        'x-forwarded-for': user.ip,
      },
      form,
    );
    expect({ status: upload.status, body: json(upload.text) }).toMatchObject({ status: 201, body: { id: expect.any(String) } });
  });

  it('serves a request carrying Keep-Alive, or an Upgrade without Connection: upgrade, as if they were absent', async () => {
    const headers: Record<string, string>[] = [{ 'keep-alive': 'timeout=5, max=100' }, { upgrade: 'websocket' }];
    for (const header of headers) {
      const res = await rawRequest('GET', '/v1/auth/jwks', { ...header, 'x-forwarded-for': randomIp() });
      expect({ header, status: res.status, body: json(res.text) }).toEqual({
        header,
        status: 200,
        body: { keys: expect.any(Array) },
      });
    }
  });

  it("honours a client's Connection: close on a proxied answer: the answer says close and the connection ends", async () => {
    const { answers, closed } = await rawExchange(
      http(['GET /v1/auth/jwks HTTP/1.1', 'Host: gateway', `X-Forwarded-For: ${randomIp()}`, 'Connection: close']),
    );
    expect(answers.map((a) => ({ status: a.status, connection: a.headers.connection, body: json(a.text) }))).toEqual([
      { status: 200, connection: 'close', body: { keys: expect.any(Array) } },
    ]);
    expect(closed).toBe(true);
  });

  it('serves an API request that offers an h2c upgrade as a plain request', async () => {
    const user = await newUser('edgeh2c');
    const res = await rawRequest('GET', '/v1/users/@me', {
      authorization: `Bearer ${user.token}`,
      'x-forwarded-for': user.ip,
      connection: 'Upgrade, HTTP2-Settings',
      upgrade: 'h2c',
      'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA',
    });
    expect({ status: res.status, body: json(res.text) }).toMatchObject({ status: 200, body: { id: user.id, username: user.username } });
  });

  it('answers 413 to a chunked body over the limit, and the service never receives the request', async () => {
    const requestId = `edge-oversize-${randomUUID()}`;
    const big = JSON.stringify({ login: 'x'.repeat(2 * 1024 * 1024), password: 'y' });
    const res = await rawRequest(
      'POST',
      '/v1/auth/login',
      { 'content-type': 'application/json', 'x-forwarded-for': randomIp(), 'x-request-id': requestId },
      big,
    );
    expect({ status: res.status, body: json(res.text) }).toEqual({ status: 413, body: { error: 'Request body is too large' } });
    expect(await authReceived(requestId)).toBe(false);
  });
});

describe('framing that could desync the gateway from a service', () => {
  const hidden = (requestId: string) => `GET /v1/auth/jwks HTTP/1.1\r\nHost: gateway\r\nX-Request-Id: ${requestId}\r\n\r\n`;
  const login = (headers: string[], body: string, requestId: string) =>
    http(['POST /v1/auth/login HTTP/1.1', 'Host: gateway', `X-Request-Id: ${requestId}`, ...headers], body);
  const variants: [string, (outer: string, inner: string) => string][] = [
    [
      'Content-Length with Transfer-Encoding',
      (o, i) => login(['Content-Length: 4', 'Transfer-Encoding: chunked'], `0\r\n\r\n${hidden(i)}`, o),
    ],
    ['two different Content-Lengths', (o, i) => login(['Content-Length: 0', `Content-Length: ${hidden(i).length}`], hidden(i), o)],
    ['two equal Content-Lengths', (o) => login(['Content-Length: 2', 'Content-Length: 2'], '{}', o)],
    ['Transfer-Encoding: chunked, identity', (o, i) => login(['Transfer-Encoding: chunked, identity'], `0\r\n\r\n${hidden(i)}`, o)],
    ['Transfer-Encoding: identity', (o, i) => login(['Transfer-Encoding: identity'], hidden(i), o)],
    ['a Transfer-Encoding folded onto a second line', (o, i) => login(['Transfer-Encoding:', ' chunked'], `0\r\n\r\n${hidden(i)}`, o)],
    ['bare LF line ends', (o, i) => `POST /v1/auth/login HTTP/1.1\nHost: gateway\nX-Request-Id: ${o}\nContent-Length: 0\n\n${hidden(i)}`],
  ];
  for (const [name, bytes] of variants)
    it(`answers ${name} once with 400, and neither that request nor one hidden in it reaches a service`, async () => {
      const [outer, inner] = [`edge-outer-${randomUUID()}`, `edge-hidden-${randomUUID()}`];
      const { answers, closed } = await rawExchange(bytes(outer, inner));
      expect({ statuses: answers.map((a) => a.status), closed }).toEqual({ statuses: [400], closed: true });
      expect({ outer: await authReceived(outer), inner: await authReceived(inner) }).toEqual({ outer: false, inner: false });
    });

  it('checks the token of a request pipelined after a body, and counts it in its own tier', async () => {
    const ip = randomIp();
    const second = http(['GET /v1/users/@me HTTP/1.1', 'Host: gateway', `X-Forwarded-For: ${ip}`, 'Connection: close']);
    const { answers } = await rawExchange(
      http(
        [
          'POST /v1/auth/login HTTP/1.1',
          'Host: gateway',
          `X-Forwarded-For: ${ip}`,
          'Content-Type: application/json',
          `Content-Length: ${wrongLogin.length}`,
        ],
        wrongLogin + second,
      ),
    );
    expect(answers.map((a) => ({ status: a.status, body: json(a.text), limit: a.headers['x-ratelimit-limit'] }))).toEqual([
      { status: 401, body: { error: 'Wrong login or password' }, limit: '5' },
      { status: 401, body: { error: 'Missing bearer token' }, limit: '300' },
    ]);
  });

  it('refuses an absolute-form request target naming another host with 400, and nothing reaches a service', async () => {
    const requestId = `edge-absolute-${randomUUID()}`;
    const res = await rawRequest('GET', 'http://127.0.0.1:1/v1/auth/jwks', { 'x-forwarded-for': randomIp(), 'x-request-id': requestId });
    expect({ status: res.status, body: json(res.text) }).toEqual({
      status: 400,
      body: { error: 'The request target must be a path starting with /' },
    });
    expect(await authReceived(requestId)).toBe(false);
  });
});
