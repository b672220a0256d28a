import { type MatrixCall, type MatrixRow, rowTitle, runMatrixRow } from '@chat/testkit';
import { expect, it } from 'vitest';
import { gateway, randomIp, type TestUser } from './helpers.ts';

/**
 * Runs an authorization matrix through the gateway: one test per row, each actor calling with its
 * own token (an actor mapped to no user calls without one), and each row's statuses and problems
 * compared with what it expects.
 */
export function matrixTests<Actor extends string>(
  actors: readonly Actor[],
  users: () => Record<Actor, TestUser | undefined>,
  rows: MatrixRow<Actor>[],
) {
  const call: MatrixCall<Actor> = async (actor, method, path, request) => {
    const user = users()[actor];
    // A client address per call: the matrix checks authorization, not the per-address rate tiers.
    const headers: Record<string, string> = { 'x-forwarded-for': randomIp(), ...request.headers };
    if (user) headers.authorization = `Bearer ${user.token}`;
    const multipart = request.body instanceof FormData;
    if (request.body !== undefined && !multipart) headers['content-type'] = 'application/json';
    const res = await fetch(`${gateway}${path}`, {
      method,
      headers,
      body: request.body === undefined ? undefined : multipart ? (request.body as FormData) : JSON.stringify(request.body),
      redirect: 'manual',
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (a served file, the docs page): the status is what the matrix checks.
    }
    return { status: res.status, body };
  };
  for (const row of rows) {
    it(rowTitle(row), async () => {
      expect(await runMatrixRow(row, actors, call)).toEqual({ statuses: row.expect, problems: [] });
    });
  }
}
