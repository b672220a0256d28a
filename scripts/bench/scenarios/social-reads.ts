import { edgePkSelect } from '../references.ts';
import { type ApiAnswer, type BenchContext, type BenchUser, defineScenario } from '../scenario.ts';

/** Contacts of the reading user: friends, and a 1:1 conversation with a last message with each. */
const CONTACTS = 20;

/**
 * A call about a user social may not know yet: it learns new users from auth's events, so a 404
 * (unknown user) is retried until its read-model has caught up.
 */
async function onceKnown(call: () => Promise<ApiAnswer>): Promise<ApiAnswer> {
  let answer = await call();
  for (let tries = 0; answer.status === 404 && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    answer = await call();
  }
  return answer;
}

function expect(answer: ApiAnswer, statuses: number[], what: string): void {
  if (!statuses.includes(answer.status)) throw new Error(`${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
}

/** A user with `CONTACTS` friends, each of whom shares a conversation with them holding one message. */
async function userWithContacts(ctx: BenchContext): Promise<BenchUser> {
  const reader = await ctx.registerUser('reader');
  for (let i = 0; i < CONTACTS; i++) {
    const contact = await ctx.registerUser('contact');
    const asked = await onceKnown(() => ctx.api('POST', '/v1/friends/requests', { token: reader.token, body: { userId: contact.id } }));
    expect(asked, [200, 201], 'POST /v1/friends/requests');
    const accepted = await onceKnown(() => ctx.api('POST', '/v1/friends/accept', { token: contact.token, body: { userId: reader.id } }));
    expect(accepted, [200, 204], 'POST /v1/friends/accept');
    const conversation = await ctx.api('POST', '/v1/dm/conversations', { token: reader.token, body: { userIds: [contact.id] } });
    expect(conversation, [200, 201], 'POST /v1/dm/conversations');
    const posted = await ctx.api('POST', '/v1/dm/messages', {
      token: contact.token,
      body: { conversationId: conversation.body.id, content: 'a last message to show in the list' },
    });
    expect(posted, [201], 'POST /v1/dm/messages');
  }
  return reader;
}

/** The friend list: each friend's summary from social's read-model of users. */
export const socialFriends = defineScenario({
  name: 'social.friends',
  summary: `GET /v1/friends of a user with ${CONTACTS} friends, through the gateway and straight to social`,
  direct: 'social',
  reference: edgePkSelect,
  setup: async (ctx) => {
    const reader = await userWithContacts(ctx);
    return { requests: [{ method: 'GET', path: '/v1/friends', headers: { authorization: `Bearer ${reader.token}` } }] };
  },
});

/** The conversation list: participants and each conversation's last message. */
export const socialConversations = defineScenario({
  name: 'social.conversations',
  summary: `GET /v1/dm/conversations of a user with ${CONTACTS} conversations, each with a last message, through the gateway and straight to social`,
  direct: 'social',
  reference: edgePkSelect,
  setup: async (ctx) => {
    const reader = await userWithContacts(ctx);
    return { requests: [{ method: 'GET', path: '/v1/dm/conversations', headers: { authorization: `Bearer ${reader.token}` } }] };
  },
});
