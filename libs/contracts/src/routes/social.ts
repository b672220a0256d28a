import { z } from 'zod';
import { Call, CallParams, JoinedCall } from '../calls.ts';
import { IdParams, ListPageQuery } from '../common.ts';
import { Activity, Game, GameSearchQuery, PutActivityBody } from '../games.ts';
import { Device, DeviceParams, KeyBundle, OneTimeKeyCount, PutDeviceBody, UploadOneTimeKeysBody } from '../keys.ts';
import { DirectMessage, PendingFriendRequest } from '../records.ts';
import { defineRoute } from '../route.ts';
import {
  BlockedUser,
  Conversation,
  CreateConversationBody,
  EditDirectMessageBody,
  Friend,
  FriendRequestBody,
  FriendRequestOutcome,
  MessagePageQuery,
  ReactionParams,
  SendDirectMessageBody,
  UserIdBody,
  UserIdParams,
} from '../social.ts';

const UNKNOWN_USER = { 404: 'Unknown user (or one who blocked you)' };
const NOT_PARTICIPANT = { 404: 'Unknown conversation or message, or the caller is not a participant' };

/** Friends and blocks (DESIGN.md route map: friends). */
export const friendsRoutes = {
  sendRequest: defineRoute({
    method: 'POST',
    path: '/v1/friends/requests',
    service: 'social',
    summary: 'Ask someone (by userId or username) to be friends; if they had already asked you, you are friends at once',
    body: FriendRequestBody,
    status: 201,
    response: FriendRequestOutcome,
    errors: { ...UNKNOWN_USER, 403: 'You have blocked this user', 409: 'Already friends or already requested' },
  }),
  listRequests: defineRoute({
    method: 'GET',
    path: '/v1/friends/requests',
    service: 'social',
    summary: 'Pending friend requests, incoming and outgoing, by the other user’s id (the cursor); paged with limit, after, before',
    query: ListPageQuery,
    status: 200,
    errors: { 400: 'Invalid query (a cursor of the wrong kind)' },
    response: z.array(PendingFriendRequest),
  }),
  accept: defineRoute({
    method: 'POST',
    path: '/v1/friends/accept',
    service: 'social',
    summary: 'Accept an incoming friend request',
    body: UserIdBody,
    status: 200,
    response: Friend,
    errors: { 404: 'No incoming request from this user' },
  }),
  decline: defineRoute({
    method: 'POST',
    path: '/v1/friends/decline',
    service: 'social',
    summary: 'Decline an incoming friend request',
    body: UserIdBody,
    status: 204,
    response: null,
    errors: { 404: 'No incoming request from this user' },
  }),
  cancel: defineRoute({
    method: 'POST',
    path: '/v1/friends/cancel',
    service: 'social',
    summary: 'Withdraw an outgoing friend request',
    body: UserIdBody,
    status: 204,
    response: null,
    errors: { 404: 'No outgoing request to this user' },
  }),
  list: defineRoute({
    method: 'GET',
    path: '/v1/friends',
    service: 'social',
    summary: "The caller's friends, by friend's user id (the cursor); paged with limit, after, before",
    query: ListPageQuery,
    status: 200,
    errors: { 400: 'Invalid query (a cursor of the wrong kind)' },
    response: z.array(Friend),
  }),
  remove: defineRoute({
    method: 'DELETE',
    path: '/v1/friends/:userId',
    service: 'social',
    summary: 'End a friendship',
    params: UserIdParams,
    status: 204,
    response: null,
    errors: { 404: 'Not friends with this user' },
  }),
  block: defineRoute({
    method: 'POST',
    path: '/v1/friends/block',
    service: 'social',
    summary:
      'Block a user: ends the friendship and pending requests both ways and stops direct messages between you; the blocker leaves a live call of the two',
    body: UserIdBody,
    status: 201,
    response: BlockedUser,
    errors: { ...UNKNOWN_USER, 409: 'Already blocked' },
  }),
  unblock: defineRoute({
    method: 'DELETE',
    path: '/v1/friends/block/:userId',
    service: 'social',
    summary: 'Unblock a user',
    params: UserIdParams,
    status: 204,
    response: null,
    errors: { 404: 'This user is not blocked' },
  }),
  listBlocked: defineRoute({
    method: 'GET',
    path: '/v1/friends/blocked',
    service: 'social',
    summary: 'Users the caller blocked, by user id (the cursor); paged with limit, after, before',
    query: ListPageQuery,
    status: 200,
    errors: { 400: 'Invalid query (a cursor of the wrong kind)' },
    response: z.array(BlockedUser),
  }),
};

/** Direct messages (DESIGN.md route map: direct messages). */
export const dmRoutes = {
  createConversation: defineRoute({
    method: 'POST',
    path: '/v1/dm/conversations',
    service: 'social',
    summary:
      'Open a conversation with these users: one id answers the one 1:1 conversation of the pair (200 when it existed, 201 when new); more make a new group of up to 10 people (201)',
    body: CreateConversationBody,
    status: 200,
    response: Conversation,
    alternatives: { 201: { description: 'A new conversation', response: Conversation } },
    errors: { 403: 'You have blocked one of these users', ...UNKNOWN_USER },
  }),
  listConversations: defineRoute({
    method: 'GET',
    path: '/v1/dm/conversations',
    service: 'social',
    summary: "The caller's conversations, each with its last message, by conversation id (the cursor); paged with limit, after, before",
    query: ListPageQuery,
    status: 200,
    errors: { 400: 'Invalid query (a cursor of the wrong kind)' },
    response: z.array(Conversation),
  }),
  getConversation: defineRoute({
    method: 'GET',
    path: '/v1/dm/conversations/:id',
    service: 'social',
    summary: 'One conversation of the caller',
    params: IdParams,
    status: 200,
    response: Conversation,
    errors: NOT_PARTICIPANT,
  }),
  leaveConversation: defineRoute({
    method: 'DELETE',
    path: '/v1/dm/conversations/:id/members/@me',
    service: 'social',
    summary:
      'Leave a group: it disappears from your list; when the owner leaves, the longest-standing participant becomes owner; the last one to leave removes it',
    params: IdParams,
    status: 204,
    response: null,
    errors: { 400: 'A direct conversation cannot be left', ...NOT_PARTICIPANT },
  }),
  listMessages: defineRoute({
    method: 'GET',
    path: '/v1/dm/conversations/:id/messages',
    service: 'social',
    summary: 'Messages newest first; `before` an id pages back, `after` an id pages forward (limit 1-100, default 50)',
    params: IdParams,
    query: MessagePageQuery,
    status: 200,
    response: z.array(DirectMessage),
    errors: NOT_PARTICIPANT,
  }),
  sendMessage: defineRoute({
    method: 'POST',
    path: '/v1/dm/messages',
    service: 'social',
    summary: 'Send a direct message (content 1-4000 characters unless attachments are given; attachments are uploads of the caller)',
    body: SendDirectMessageBody,
    status: 201,
    response: DirectMessage,
    errors: { ...NOT_PARTICIPANT, 403: 'Blocked between the two participants', 503: 'The media service is unavailable' },
  }),
  editMessage: defineRoute({
    method: 'PATCH',
    path: '/v1/dm/messages/:id',
    service: 'social',
    summary: 'Edit your own message (sets editedAt)',
    params: IdParams,
    body: EditDirectMessageBody,
    status: 200,
    response: DirectMessage,
    errors: { ...NOT_PARTICIPANT, 403: 'Not your message' },
  }),
  deleteMessage: defineRoute({
    method: 'DELETE',
    path: '/v1/dm/messages/:id',
    service: 'social',
    summary: 'Delete your own message',
    params: IdParams,
    status: 204,
    response: null,
    errors: { ...NOT_PARTICIPANT, 403: 'Not your message' },
  }),
  addReaction: defineRoute({
    method: 'PUT',
    path: '/v1/dm/messages/:id/reactions/:emoji/@me',
    service: 'social',
    summary: 'React to a message with an emoji (idempotent)',
    params: ReactionParams,
    status: 204,
    response: null,
    errors: { ...NOT_PARTICIPANT, 403: 'Blocked between the two participants' },
  }),
  removeReaction: defineRoute({
    method: 'DELETE',
    path: '/v1/dm/messages/:id/reactions/:emoji/@me',
    service: 'social',
    summary: 'Take back your reaction (idempotent)',
    params: ReactionParams,
    status: 204,
    response: null,
    errors: NOT_PARTICIPANT,
  }),
};

/** Typing indicators (DESIGN.md presence and typing). */
const typingRoutes = {
  conversationTyping: defineRoute({
    method: 'POST',
    path: '/v1/dm/conversations/:id/typing',
    service: 'social',
    summary: 'Show the other participants that the caller is typing (TYPING_START, 10 s, not stored)',
    params: IdParams,
    status: 204,
    response: null,
    errors: { 404: 'Unknown conversation or not a participant' },
  }),
};

/** E2EE key distribution (DESIGN.md route map: E2EE keys). */
export const keysRoutes = {
  putDevice: defineRoute({
    method: 'PUT',
    path: '/v1/keys/devices/:deviceId',
    service: 'social',
    summary:
      "Publish a device's identity key (Ed25519) and signed prekey (X25519, signed by the identity key); a new identity key drops the device's one-time keys and tells contacts",
    params: DeviceParams,
    body: PutDeviceBody,
    status: 200,
    response: Device,
    alternatives: { 201: { description: 'A new device', response: Device } },
    errors: { 400: 'Malformed key, or the signature does not verify' },
  }),
  uploadOneTimeKeys: defineRoute({
    method: 'POST',
    path: '/v1/keys/devices/:deviceId/one-time-keys',
    service: 'social',
    summary: 'Add one-time prekeys to a device (at most 100 per call and 500 held); answers how many it holds now',
    params: DeviceParams,
    body: UploadOneTimeKeysBody,
    status: 200,
    response: OneTimeKeyCount,
    errors: { 400: 'Malformed keys or more than the device may hold', 404: 'Unknown device', 409: 'A keyId the device already holds' },
  }),
  counts: defineRoute({
    method: 'GET',
    path: '/v1/keys/count',
    service: 'social',
    summary: "How many one-time keys each of the caller's devices has left",
    status: 200,
    response: z.array(OneTimeKeyCount),
  }),
  deleteDevice: defineRoute({
    method: 'DELETE',
    path: '/v1/keys/devices/:deviceId',
    service: 'social',
    summary: 'Remove a device and its keys',
    params: DeviceParams,
    status: 204,
    response: null,
    errors: { 404: 'Unknown device' },
  }),
  claimBundles: defineRoute({
    method: 'GET',
    path: '/v1/keys/users/:userId',
    service: 'social',
    summary:
      'A bundle per device of the user, each claiming one one-time key (handed out once); only for the user, friends and people who share a conversation or a server',
    params: UserIdParams,
    status: 200,
    response: z.array(KeyBundle),
    errors: {
      404: 'Unknown user, or one the caller may not reach',
      429: 'Too many bundle fetches',
      503: 'The guilds service is unavailable',
    },
  }),
};

/** The game index and activities (DESIGN.md route map: game index). */
export const gamesRoutes = {
  search: defineRoute({
    method: 'GET',
    path: '/v1/games',
    service: 'social',
    summary: 'Search the game index by name or alias, typo-tolerant; exact and prefix matches first (no q: by name)',
    query: GameSearchQuery,
    status: 200,
    response: z.array(Game),
  }),
  get: defineRoute({
    method: 'GET',
    path: '/v1/games/:id',
    service: 'social',
    summary: 'One game of the index',
    params: IdParams,
    status: 200,
    response: Game,
    errors: { 404: 'Unknown game' },
  }),
  putActivity: defineRoute({
    method: 'PUT',
    path: '/v1/users/@me/activity',
    service: 'social',
    summary: 'Set what the caller is playing ({gameId} from the index or a free {name}); null clears (204)',
    body: PutActivityBody,
    status: 200,
    response: Activity,
    alternatives: { 204: { description: 'Activity cleared', response: null } },
    errors: { 404: 'Unknown game' },
  }),
};

/** Every route of the social service. */
const CALL_VISIBILITY = { 404: 'No such call, or not in its conversation' };

const callRoutes = {
  startCall: defineRoute({
    method: 'POST',
    path: '/v1/dm/conversations/:id/call',
    service: 'social',
    summary: "Ring the other participants: 201 with the call and the caller's media grant. Unanswered ringing ends after 30 s as missed",
    params: CallParams,
    status: 201,
    response: JoinedCall,
    errors: {
      403: 'Blocked: the other person cannot be rung',
      404: 'Unknown conversation',
      409: 'A call is already live in this conversation',
    },
  }),
  getCall: defineRoute({
    method: 'GET',
    path: '/v1/calls/:id',
    service: 'social',
    summary: 'A call, to the participants of its conversation',
    params: CallParams,
    status: 200,
    response: Call,
    errors: CALL_VISIBILITY,
  }),
  acceptCall: defineRoute({
    method: 'POST',
    path: '/v1/calls/:id/accept',
    service: 'social',
    summary:
      'Answer (or rejoin) a live call: the call, active, and the media grant for its room; someone already in it gets a fresh grant and changes nothing',
    params: CallParams,
    status: 200,
    response: JoinedCall,
    errors: {
      ...CALL_VISIBILITY,
      403: 'Blocked: in a 1:1 call, one of the two blocked the other',
      409: 'The call has ended',
    },
  }),
  declineCall: defineRoute({
    method: 'POST',
    path: '/v1/calls/:id/decline',
    service: 'social',
    summary: 'Decline a ringing call; when nobody is left to answer, it ends',
    params: CallParams,
    status: 200,
    response: Call,
    errors: { ...CALL_VISIBILITY, 409: 'Not ringing for the caller' },
  }),
  leaveCall: defineRoute({
    method: 'POST',
    path: '/v1/calls/:id/leave',
    service: 'social',
    summary: 'Leave a call (the initiator leaving a ringing call cancels it); the call ends when its last participant leaves',
    params: CallParams,
    status: 200,
    response: Call,
    errors: { ...CALL_VISIBILITY, 409: 'Not in the call' },
  }),
};

export const socialRoutes = { ...friendsRoutes, ...dmRoutes, ...keysRoutes, ...gamesRoutes, ...callRoutes, ...typingRoutes };
