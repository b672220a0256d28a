import { isDeepStrictEqual } from 'node:util';
import { ALL_ROUTES, type Method } from '@chat/contracts';

/** A route as the contracts name it: `METHOD /v1/path/:param`. */
export type RouteKey = `${Method} /v1/${string}`;

export const routeKey = (route: { method: Method; path: string }): RouteKey => `${route.method} ${route.path}` as RouteKey;

/** What one actor's call carries: the route's path parameters, a query, a body and extra headers. */
export interface MatrixRequest {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * One row of an authorization matrix: a route of the contracts asked by every actor that applies,
 * with the status each must get. The coverage check (test/contract/authorization-coverage.test.ts)
 * finds rows by their `route:` literal, so every route of the contracts has at least one.
 */
export interface MatrixRow<Actor extends string> {
  route: RouteKey;
  /** What the row shows, when the route alone does not say it. */
  name?: string;
  /** The status each actor gets; an actor left out does not apply to this route. */
  expect: Partial<Record<Actor, number>>;
  /** The call of one actor, made fresh for each when the call uses its target up (a delete, a kick). */
  request?: (actor: Actor) => MatrixRequest | Promise<MatrixRequest>;
  /** What a refused call must leave as it was: read before and after every 4xx and compared. */
  state?: (request: MatrixRequest, actor: Actor) => Promise<unknown>;
  /**
   * What an actor's accepted answer must not show (a search's hits from a hidden channel,
   * another's conversation in a list): the problem found, or undefined. A 200 can still leak.
   */
  answer?: (body: unknown, actor: Actor) => string | undefined;
}

export interface MatrixAnswer {
  status: number;
  body: unknown;
}

export type MatrixCall<Actor extends string> = (
  actor: Actor,
  method: Method,
  path: string,
  request: MatrixRequest,
) => Promise<MatrixAnswer>;

/** The row's title in a test list: its route, and what it shows. */
export const rowTitle = <Actor extends string>(row: MatrixRow<Actor>): string => (row.name ? `${row.route} (${row.name})` : row.route);

/** The path of a route template with its parameters filled in (each one encoded) and the query. */
export function pathOf(template: string, request: MatrixRequest): string {
  const path = template.replace(/:(\w+)/g, (_, name: string) => {
    const value = request.params?.[name];
    if (value === undefined) throw new Error(`${template}: no value for :${name}`);
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams(request.query ?? {}).toString();
  return query ? `${path}?${query}` : path;
}

/**
 * Asks the row's route as each actor that applies and answers what each got, with every problem
 * found on the way: a 4xx whose body is not `{"error": string}`, or a refused call that changed
 * the row's state. The test compares the answer with `{ statuses: row.expect, problems: [] }`.
 */
export async function runMatrixRow<Actor extends string>(
  row: MatrixRow<Actor>,
  actors: readonly Actor[],
  call: MatrixCall<Actor>,
): Promise<{ statuses: Partial<Record<Actor, number>>; problems: string[] }> {
  const [method, template] = row.route.split(' ') as [Method, string];
  if (!ALL_ROUTES.some((route) => route.method === method && route.path === template)) {
    return { statuses: {}, problems: [`${row.route} is not a route of the contracts`] };
  }
  const statuses: Partial<Record<Actor, number>> = {};
  const problems: string[] = [];
  for (const actor of actors) {
    if (row.expect[actor] === undefined) continue;
    const request = (await row.request?.(actor)) ?? {};
    const before = await row.state?.(request, actor);
    const answer = await call(actor, method, pathOf(template, request), request);
    statuses[actor] = answer.status;
    if (answer.status < 400) {
      const leak = row.answer?.(answer.body, actor);
      if (leak) problems.push(`${actor}: ${leak}`);
      continue;
    }
    if (!isErrorBody(answer.body)) problems.push(`${actor}: ${answer.status} answered ${JSON.stringify(answer.body)}, not {"error"}`);
    if (row.state && answer.status < 500) {
      const after = await row.state(request, actor);
      if (!isDeepStrictEqual(before, after))
        problems.push(`${actor}: refused with ${answer.status} yet changed ${JSON.stringify(before)} to ${JSON.stringify(after)}`);
    }
  }
  return { statuses, problems };
}

function isErrorBody(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).join() === 'error' &&
    typeof (body as { error: unknown }).error === 'string'
  );
}
