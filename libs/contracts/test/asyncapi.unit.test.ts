import { describe, expect, it } from 'vitest';
import { ALL_DISPATCH_NAMES, buildAsyncApi } from '../src/asyncapi.ts';
import { DISPATCH_NAMES, DISPATCH_PAYLOADS } from '../src/realtime.ts';

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, read by path
const doc = buildAsyncApi({ title: 'test', version: '1' }) as any;

describe('the AsyncAPI document of the socket', () => {
  it('has a message for every dispatch name of the contracts, READY and RESUMED included', () => {
    const names = new Set([...Object.values(DISPATCH_NAMES), ...Object.keys(DISPATCH_PAYLOADS)]);
    expect(names.has('KEYS_UPDATE')).toBe(true);
    for (const name of names) {
      expect(doc.components.messages[name], name).toBeDefined();
      expect(doc.components.messages[name].payload.properties.t).toEqual({ type: 'string', const: name });
      expect(doc.channels.socket.messages[name]).toEqual({ $ref: `#/components/messages/${name}` });
      expect(doc.operations.sendServerFrames.messages).toContainEqual({ $ref: `#/channels/socket/messages/${name}` });
    }
    expect(ALL_DISPATCH_NAMES).toHaveLength(names.size);
  });

  it('documents the client frames as received and the control frames as sent, on the socket path', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    expect(doc.channels.socket.address).toBe('/v1/gateway/ws');
    expect(doc.operations.receiveClientFrames.messages.map((m: { $ref: string }) => m.$ref.split('/').at(-1))).toEqual([
      'Heartbeat',
      'Identify',
      'Resume',
    ]);
    expect(doc.components.messages.Identify.payload.properties.op).toEqual({ type: 'number', const: 2 });
    expect(doc.components.messages.Hello.summary).toBe('Server frame op 10');
  });

  it('resolves every $ref it contains', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const path = (JSON.parse(`{${ref}}`) as { $ref: string }).$ref.slice(2).split('/');
      const target = path.reduce((node, key) => node?.[key], doc);
      expect(target, ref).toBeDefined();
    }
  });

  it('carries the REST records as payloads (a friend request dispatch is a PendingFriendRequest)', () => {
    const d = doc.components.messages.FRIEND_REQUEST_CREATE.payload.properties.d;
    expect(d).toEqual({ $ref: '#/components/schemas/PendingFriendRequest' });
    expect(doc.components.schemas.PendingFriendRequest.properties.direction).toBeDefined();
    expect(doc.components.messages.PRESENCE_UPDATE.payload.properties.d).toEqual({ $ref: '#/components/schemas/PresenceUpdate' });
  });
});
