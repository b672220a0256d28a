import { z } from 'zod';
import { toSchema } from './openapi.ts';
import {
  CLOSE_CODES,
  DISPATCH_NAMES,
  DISPATCH_PAYLOADS,
  type DispatchName,
  HeartbeatAckFrame,
  HeartbeatFrame,
  HelloFrame,
  IdentifyFrame,
  InvalidSessionFrame,
  OP,
  ReconnectFrame,
  ResumeFrame,
} from './realtime.ts';

type JsonSchema = Record<string, unknown>;

/** Every dispatch name (`t`) the socket sends: READY and RESUMED, then one per domain event kind. */
export const ALL_DISPATCH_NAMES: readonly DispatchName[] = [
  ...new Set<DispatchName>(['READY', 'RESUMED', ...(Object.values(DISPATCH_NAMES) as DispatchName[])]),
];

const CLIENT_FRAMES = { Heartbeat: HeartbeatFrame, Identify: IdentifyFrame, Resume: ResumeFrame };
const SERVER_FRAMES = {
  Hello: HelloFrame,
  HeartbeatAck: HeartbeatAckFrame,
  Reconnect: ReconnectFrame,
  InvalidSession: InvalidSessionFrame,
};

/** A DISPATCH frame of one name: `t` that name, `d` its payload schema (the record REST returns). */
function dispatchFrameOf(name: DispatchName): z.ZodType {
  return z.object({ op: z.literal(OP.DISPATCH), t: z.literal(name), s: z.number().int().positive(), d: DISPATCH_PAYLOADS[name] });
}

/**
 * The AsyncAPI 3.0 document of the real-time socket (`/v1/gateway/ws`), generated from the same
 * zod schemas that validate the frames and parse each dispatch: the socket's counterpart of the
 * OpenAPI document. One message per client frame, per server frame and per dispatch name.
 */
export function buildAsyncApi(info: { title: string; version: string }): JsonSchema {
  const schemas: Record<string, JsonSchema> = {};
  const messages: Record<string, JsonSchema> = {};
  const add = (name: string, schema: z.ZodType, summary: string) => {
    messages[name] = { name, title: name, summary, contentType: 'application/json', payload: toSchema(schema, 'output', schemas) };
  };
  for (const [name, schema] of Object.entries(CLIENT_FRAMES)) add(name, schema, `Client frame op ${OP[upper(name)]}`);
  for (const [name, schema] of Object.entries(SERVER_FRAMES)) add(name, schema, `Server frame op ${OP[upper(name)]}`);
  for (const name of ALL_DISPATCH_NAMES) add(name, dispatchFrameOf(name), `DISPATCH (op 0) with t = ${name}`);
  const refs = (names: string[]) => names.map((name) => ({ $ref: `#/channels/socket/messages/${name}` }));
  return {
    asyncapi: '3.0.0',
    info: {
      ...info,
      description:
        'The real-time event socket: open GET /v1/gateway for its URL, then a WebSocket at /v1/gateway/ws. ' +
        `Frames are JSON {op, d, s, t}; close codes: ${Object.entries(CLOSE_CODES)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ')}.`,
    },
    servers: { gateway: { host: 'localhost', protocol: 'ws', pathname: '/v1/gateway/ws', description: 'Any gateway replica' } },
    channels: {
      socket: {
        address: '/v1/gateway/ws',
        messages: Object.fromEntries(Object.keys(messages).map((name) => [name, { $ref: `#/components/messages/${name}` }])),
      },
    },
    operations: {
      receiveClientFrames: { action: 'receive', channel: { $ref: '#/channels/socket' }, messages: refs(Object.keys(CLIENT_FRAMES)) },
      sendServerFrames: {
        action: 'send',
        channel: { $ref: '#/channels/socket' },
        messages: refs([...Object.keys(SERVER_FRAMES), ...ALL_DISPATCH_NAMES]),
      },
    },
    components: { schemas, messages },
  };
}

/** `HeartbeatAck` → `HEARTBEAT_ACK` (the opcode's name in OP). */
const upper = (name: string) => name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() as keyof typeof OP;
