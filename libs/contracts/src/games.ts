import { z } from 'zod';
import { Id, shownName, Timestamp } from './common.ts';

/** The game index and what users are playing (social service). */

export const Game = z
  .object({
    id: Id,
    name: z.string(),
    aliases: z.array(z.string()),
    /** Process names a client may match to detect the game (where known). */
    executables: z.array(z.string()),
    coverUrl: z.string().nullable(),
    releaseYear: z.number().int().nullable(),
  })
  .meta({ id: 'Game' });
export type Game = z.infer<typeof Game>;

export const GameSearchQuery = z.object({
  q: z.string().trim().max(100).default(''),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

/** What a user is playing: a game of the index, or a free name; `startedAt` is when they began. */
export const Activity = z.object({ gameId: Id.nullable(), name: z.string(), startedAt: Timestamp }).meta({ id: 'Activity' });
export type Activity = z.infer<typeof Activity>;

export const MAX_ACTIVITY_NAME_LENGTH = 128;

/**
 * Exactly one of `gameId` and `name`; `null` for either (or a `null` body) clears the activity.
 */
export const PutActivityBody = z.union([
  z.null(),
  z
    .object({
      gameId: Id.nullable().optional(),
      // Shown to friends and co-members beside the user's name: the same rules as names.
      name: shownName(1, MAX_ACTIVITY_NAME_LENGTH).nullable().optional(),
    })
    .refine((b) => (b.gameId !== undefined) !== (b.name !== undefined), { error: 'give exactly one of gameId and name' }),
]);
export type PutActivityBody = z.infer<typeof PutActivityBody>;

export const ACTIVITY_SUBJECTS = { activityUpdated: 'social.activity.updated' } as const;

/** A user's activity changed; null: they stopped playing. For presence (PRESENCE_UPDATE). */
export const ActivityUpdatedEvent = z.object({ userId: Id, activity: Activity.nullable() });
export type ActivityUpdatedEvent = z.infer<typeof ActivityUpdatedEvent>;
