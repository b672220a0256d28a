import type { z } from 'zod';
import { AccountUpdatedData, AUTH_SUBJECTS, SessionRevokedData, UserEventData } from './auth.ts';
import { CALL_SUBJECTS, CallEvent } from './calls.ts';
import { ACTIVITY_SUBJECTS, ActivityUpdatedEvent } from './games.ts';
import { GUILDS_EVENTS } from './guilds.ts';
import { KEYS_SUBJECTS, KeysChangedEvent, KeysLowEvent } from './keys.ts';
import { EmbedsResolved, MEDIA_SUBJECTS, MediaFileUploaded } from './media.ts';
import { MESSAGES_EVENTS } from './messages.ts';
import { MUSIC_SUBJECTS, PlayerUpdatedEvent } from './music.ts';
import { READ_STATE_EVENTS } from './read-states.ts';
import { ChannelTypingEvent, ConversationTypingEvent, PresenceChosenEvent, REALTIME_SUBJECTS, UserDisconnectedEvent } from './realtime.ts';
import {
  BlockEvent,
  ConversationCreatedEvent,
  ConversationLeftEvent,
  DmDeletedEvent,
  DmMessageEvent,
  DmReactionEvent,
  FriendAcceptedEvent,
  FriendRemovedEvent,
  FriendRequestedEvent,
  SOCIAL_SUBJECTS,
} from './social.ts';
import { VOICE_EVENTS } from './voice.ts';

/** The payload schema of every domain event the platform's services publish, by subject. */
export const EVENT_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  [AUTH_SUBJECTS.userRegistered]: UserEventData,
  [AUTH_SUBJECTS.userUpdated]: UserEventData,
  [AUTH_SUBJECTS.accountUpdated]: AccountUpdatedData,
  [AUTH_SUBJECTS.sessionRevoked]: SessionRevokedData,
  [CALL_SUBJECTS.created]: CallEvent,
  [CALL_SUBJECTS.updated]: CallEvent,
  [CALL_SUBJECTS.ended]: CallEvent,
  ...GUILDS_EVENTS,
  ...MESSAGES_EVENTS,
  ...VOICE_EVENTS,
  ...READ_STATE_EVENTS,
  [SOCIAL_SUBJECTS.friendRequested]: FriendRequestedEvent,
  [SOCIAL_SUBJECTS.friendAccepted]: FriendAcceptedEvent,
  [SOCIAL_SUBJECTS.friendRemoved]: FriendRemovedEvent,
  [SOCIAL_SUBJECTS.blockCreated]: BlockEvent,
  [SOCIAL_SUBJECTS.blockRemoved]: BlockEvent,
  [SOCIAL_SUBJECTS.conversationCreated]: ConversationCreatedEvent,
  [SOCIAL_SUBJECTS.conversationLeft]: ConversationLeftEvent,
  [SOCIAL_SUBJECTS.dmCreated]: DmMessageEvent,
  [SOCIAL_SUBJECTS.dmUpdated]: DmMessageEvent,
  [SOCIAL_SUBJECTS.dmDeleted]: DmDeletedEvent,
  [SOCIAL_SUBJECTS.dmReactionAdded]: DmReactionEvent,
  [SOCIAL_SUBJECTS.dmReactionRemoved]: DmReactionEvent,
  [ACTIVITY_SUBJECTS.activityUpdated]: ActivityUpdatedEvent,
  [KEYS_SUBJECTS.keysChanged]: KeysChangedEvent,
  [KEYS_SUBJECTS.keysLow]: KeysLowEvent,
  [MEDIA_SUBJECTS.fileUploaded]: MediaFileUploaded,
  [MEDIA_SUBJECTS.embedsResolved]: EmbedsResolved,
  [MUSIC_SUBJECTS.playerUpdated]: PlayerUpdatedEvent,
  [REALTIME_SUBJECTS.presenceUpdated]: PresenceChosenEvent,
  [REALTIME_SUBJECTS.channelTyping]: ChannelTypingEvent,
  [REALTIME_SUBJECTS.conversationTyping]: ConversationTypingEvent,
  [REALTIME_SUBJECTS.userDisconnected]: UserDisconnectedEvent,
};

/** The first segment of the subjects the platform's services publish under: each must be in EVENT_SCHEMAS. */
export const SERVICE_EVENT_PREFIXES: readonly string[] = ['auth', 'guilds', 'social', 'media', 'music', 'gateway'];
