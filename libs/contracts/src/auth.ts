import { z } from 'zod';
import { Id } from './common.ts';

/** Schemas of the auth area: request bodies, events and RPC messages. */

/**
 * Payload of `auth.user.registered` and `auth.user.updated`: what other services keep in their
 * read-models of users.
 */
export const UserEventData = z.object({
  id: Id,
  username: z.string(),
  displayName: z.string(),
  avatarUrl: z.string().nullable(),
  badges: z.array(z.string()),
});
export type UserEventData = z.infer<typeof UserEventData>;

export const AUTH_SUBJECTS = {
  userRegistered: 'auth.user.registered',
  userUpdated: 'auth.user.updated',
} as const;
