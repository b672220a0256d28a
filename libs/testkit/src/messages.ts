import { randomUUID } from 'node:crypto';

/** A channel message as guilds' events carry it (MessageEventData), for tests that publish one themselves. */
export function channelMessageRecord(fields: { channelId?: string; serverId?: string; authorId?: string; content?: string } = {}) {
  return {
    id: randomUUID(),
    channelId: fields.channelId ?? randomUUID(),
    serverId: fields.serverId ?? randomUUID(),
    authorId: fields.authorId ?? randomUUID(),
    authorName: 'Author',
    authorAvatar: null,
    content: fields.content ?? 'hello',
    attachments: {},
    replyToId: null,
    mentions: { users: [], roles: [], everyone: false },
    pinned: false,
    editedAt: null,
    createdAt: new Date().toISOString(),
    webhookId: null,
    type: 'default',
    embeds: [],
  };
}
