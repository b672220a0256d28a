import type { z } from 'zod';

/**
 * One request/reply subject with the schemas of what is asked and what is answered. The caller's
 * `requestRpc` and the server's `serveRpc` (libs/kit) both take it, so each reply is parsed (and
 * stripped) by its schema on both sides of the hop and a request is typed by its subject.
 */
export interface RpcContract<Req extends z.ZodType = z.ZodType, Rep extends z.ZodType = z.ZodType> {
  subject: string;
  request: Req;
  reply: Rep;
}

export function defineRpc<Req extends z.ZodType, Rep extends z.ZodType>(subject: string, request: Req, reply: Rep): RpcContract<Req, Rep> {
  return { subject, request, reply };
}
