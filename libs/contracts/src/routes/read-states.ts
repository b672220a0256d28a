import { z } from 'zod';
import { IdParams } from '../common.ts';
import {
  AckBody,
  AckChannelParams,
  AckNotificationsBody,
  NotificationFeed,
  NotificationSettings,
  NotificationsAcked,
  NotificationsQuery,
  PutNotificationSettingsBody,
  ReadState,
  SettingsParams,
} from '../read-states.ts';
import { defineRoute } from '../route.ts';

/**
 * Read states and notifications (DESIGN.md route map). Social serves all of them, also the paths
 * under guilds' and auth's prefixes: the gateway proxies by the contract's service.
 */

const s = 'social' as const;
const GUILDS_DOWN = { 503: 'The guilds service is unavailable (it decides who may view a channel)' };

export const readStatesRoutes = {
  ackChannel: defineRoute({
    method: 'PUT',
    path: '/v1/channels/:channelId/ack',
    service: s,
    summary: 'Mark a channel read up to a message (only forwards: an older id changes nothing); answers the read state',
    params: AckChannelParams,
    body: AckBody,
    status: 200,
    response: ReadState,
    errors: { 404: 'Unknown channel, or not visible to the caller; or a message id from the future', ...GUILDS_DOWN },
  }),
  ackConversation: defineRoute({
    method: 'PUT',
    path: '/v1/dm/conversations/:id/ack',
    service: s,
    summary: 'Mark a conversation read up to a message (only forwards: an older id changes nothing); answers the read state',
    params: IdParams,
    body: AckBody,
    status: 200,
    response: ReadState,
    errors: { 404: 'Unknown conversation, or the caller is not a participant; or no message of it, newer than its newest' },
  }),
  listReadStates: defineRoute({
    method: 'GET',
    path: '/v1/users/@me/read-states',
    service: s,
    summary:
      "The caller's read states: every conversation, and each channel acked, posted in or mentioned in that the caller may still view",
    status: 200,
    response: z.array(ReadState),
    errors: GUILDS_DOWN,
  }),
  listNotifications: defineRoute({
    method: 'GET',
    path: '/v1/notifications',
    service: s,
    summary:
      'The notification feed, newest first (mentions, replies, friend requests and accepts, join-request decisions, missed calls), with the unread count',
    query: NotificationsQuery,
    status: 200,
    response: NotificationFeed,
  }),
  ackNotifications: defineRoute({
    method: 'POST',
    path: '/v1/notifications/ack',
    service: s,
    summary: 'Mark the feed read up to and including a notification id (only forwards)',
    body: AckNotificationsBody,
    status: 200,
    response: NotificationsAcked,
    errors: { 404: 'An id past the newest entry of the feed' },
  }),
  getNotificationSettings: defineRoute({
    method: 'GET',
    path: '/v1/users/@me/notification-settings/:serverId',
    service: s,
    summary: "The caller's notification settings for a server (level all, not muted, when never set)",
    params: SettingsParams,
    status: 200,
    response: NotificationSettings,
    errors: { 404: 'A server the caller is not a member of (unknown or deleted too)' },
  }),
  putNotificationSettings: defineRoute({
    method: 'PUT',
    path: '/v1/users/@me/notification-settings/:serverId',
    service: s,
    summary:
      'Replace the notification settings for a server: level all|mentions|none, muteUntil (a muted server still counts direct mentions), per-channel levels',
    params: SettingsParams,
    body: PutNotificationSettingsBody,
    status: 200,
    response: NotificationSettings,
    errors: { 404: 'A server the caller is not a member of (unknown or deleted too); nothing is stored' },
  }),
};
