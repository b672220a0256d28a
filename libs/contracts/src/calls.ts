import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { MediaGrant } from './voice.ts';

/** Calls in direct conversations (social): ringing, then active when someone answers, then ended. */

export const CallState = z.enum(['ringing', 'active', 'ended']);
export const CallParticipantState = z.enum(['ringing', 'joined', 'declined', 'left']);

export const Call = z
  .object({
    id: Id,
    conversationId: Id,
    initiatorId: Id,
    state: CallState,
    participants: z.array(z.object({ userId: Id, state: CallParticipantState })),
    createdAt: Timestamp,
    /** When someone first answered; null while ringing or when nobody did. */
    answeredAt: Timestamp.nullable(),
    endedAt: Timestamp.nullable(),
    /** Why it ended: nobody answered in time (`missed`), everyone declined, or the last one left. */
    endReason: z.enum(['missed', 'declined', 'completed']).nullable(),
  })
  .meta({ id: 'Call' });
export type Call = z.infer<typeof Call>;

/** Starting or accepting a call: the call, and the caller's media grant for its room (the call's id). */
export const JoinedCall = Call.extend({ grant: MediaGrant }).meta({ id: 'JoinedCall' });
export type JoinedCall = z.infer<typeof JoinedCall>;

export const CallParams = z.object({ id: Id });

export const CALL_SUBJECTS = {
  created: 'social.call.created',
  updated: 'social.call.updated',
  ended: 'social.call.ended',
} as const;

/** Payload of every call event: the call, and who it concerns (the conversation's participants, less those who blocked the one acting or the caller). */
export const CallEvent = z.object({ call: Call, participantIds: z.array(Id) });
export type CallEvent = z.infer<typeof CallEvent>;
