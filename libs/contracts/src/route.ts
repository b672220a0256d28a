import type { z } from 'zod';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ServiceName = 'auth' | 'guilds' | 'social' | 'media' | 'music' | 'gateway';
/** The gateway's rate tier of a route (spec section 8). */
export type RateTier = 'auth' | 'general' | 'webhook';

/**
 * One HTTP operation: the single description from which the service validates its input, the
 * gateway knows which routes are public, and the OpenAPI document is generated.
 */
export interface RouteContract {
  method: Method;
  /** Fastify-style path with `:params`, always under /v1. */
  path: string;
  service: ServiceName;
  summary: string;
  /** false for the spec's public endpoints (no bearer token). */
  auth: boolean;
  tier: RateTier;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** multipart/form-data instead of JSON (documented, not validated by zod). */
  multipart?: boolean;
  /** The success status and its body schema (null: no body). */
  status: number;
  response: z.ZodType | null;
  /** A second success outcome (e.g. 202 when verification is pending), status -> its answer. */
  alternatives?: Record<number, { description: string; response: z.ZodType | null }>;
  /** Other documented outcomes, status -> description. */
  errors?: Record<number, string>;
}

type Defaults = { auth: true; tier: 'general' };
/** Fills the defaults (authenticated, General tier) and keeps the literal types for inference. */
export function defineRoute<const C extends Omit<RouteContract, keyof Defaults> & Partial<Pick<RouteContract, keyof Defaults>>>(
  contract: C,
): C & Omit<Defaults, keyof C> & RouteContract {
  return { auth: true, tier: 'general', ...contract } as C & Omit<Defaults, keyof C> & RouteContract;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
type In<S> = S extends z.ZodType ? z.input<S> : undefined;

export type BodyOf<C extends RouteContract> = Out<C['body']>;
export type QueryOf<C extends RouteContract> = Out<C['query']>;
export type ParamsOf<C extends RouteContract> = Out<C['params']>;
/** What a handler returns: the response schema's input (the serialiser's view). */
export type ReplyOf<C extends RouteContract> = C['response'] extends z.ZodType ? In<C['response']> : undefined;
