import {
  type BlockEvent,
  type FriendAcceptedEvent,
  type FriendRemovedEvent,
  type FriendRequestedEvent,
  SOCIAL_SUBJECTS,
} from '@chat/contracts';

/** A dispatch whose payload depends on who receives it: the record that user's own REST list holds. */
export interface PersonalDispatch {
  userId: string;
  /** `user` is the other person, as lists show them; their status is filled in when dispatched. */
  record: { user: { id: string; status: string } } & Record<string, unknown>;
  /** Friend records (the two are friends): shown live with what the friend is playing, as `GET /v1/friends` does. */
  withActivity?: boolean;
}

/**
 * Friend and block events: each side gets what its own list shows (`GET /v1/friends/requests`,
 * `/v1/friends`, `/v1/friends/blocked`): the other user, the direction of a request. A block is
 * told to the blocker only, as on Discord. Undefined for every other event.
 */
export function personalDispatches(subject: string, data: unknown): PersonalDispatch[] | undefined {
  switch (subject) {
    case SOCIAL_SUBJECTS.friendRequested: {
      const e = data as FriendRequestedEvent;
      return [
        { userId: e.requesterId, record: { user: e.recipient, direction: 'outgoing', createdAt: e.createdAt } },
        { userId: e.recipientId, record: { user: e.requester, direction: 'incoming', createdAt: e.createdAt } },
      ];
    }
    case SOCIAL_SUBJECTS.friendAccepted: {
      const e = data as FriendAcceptedEvent;
      return [
        { userId: e.requesterId, record: { user: e.recipient, createdAt: e.createdAt }, withActivity: true },
        { userId: e.recipientId, record: { user: e.requester, createdAt: e.createdAt }, withActivity: true },
      ];
    }
    case SOCIAL_SUBJECTS.friendRemoved: {
      const e = data as FriendRemovedEvent;
      return [
        { userId: e.userId, record: { user: e.otherUser, relation: e.relation, reason: e.reason } },
        { userId: e.otherUserId, record: { user: e.user, relation: e.relation, reason: e.reasonShownToOther ?? e.reason } },
      ];
    }
    case SOCIAL_SUBJECTS.blockCreated:
    case SOCIAL_SUBJECTS.blockRemoved: {
      const e = data as BlockEvent;
      return [{ userId: e.userId, record: { user: e.blockedUser, createdAt: e.createdAt } }];
    }
    default:
      return undefined;
  }
}
