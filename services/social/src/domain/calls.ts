import { CALL_SUBJECTS, type Call, type CallEvent, type JoinedCall } from '@chat/contracts';
import {
  conflict,
  enqueueEvent,
  forbidden,
  type IssueMediaGrant,
  notFound,
  type Pool,
  type Queryable,
  type RequestContext,
  withTx,
} from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import * as calls from '../db/calls.ts';
import { conversationForParticipant, lockConversation } from '../db/conversations.ts';
import { participantAccess } from './conversations.ts';
import { writeMessage } from './messages.ts';

/**
 * Calls in direct conversations: ringing when started, active once someone answers, ended when the
 * last participant leaves, when everyone rung declined, or as missed when nobody answered in time.
 * Every change is a `social.call.*` event for the conversation's participants.
 */

export interface CallDeps {
  pool: Pool;
  issueMediaGrant: IssueMediaGrant;
  /** How long a call rings before it ends as missed. */
  ringTimeoutSeconds: number;
  now: () => Date;
}

type Change = { subject: (typeof CALL_SUBJECTS)[keyof typeof CALL_SUBJECTS]; call: Call; audience: string[] };

export async function startCall(deps: CallDeps, ctx: RequestContext, conversationId: string): Promise<JoinedCall> {
  const call = await withTx(deps.pool, async (tx) => {
    const access = await participantAccess(tx, ctx, conversationId, { lock: true });
    if (access.blocked) throw forbidden('You cannot call this user: one of you has blocked the other');
    // Whoever blocked the caller is not rung (and does not learn of the call).
    const rung = access.audienceIds.filter((id) => id !== ctx.userId);
    if (rung.length === 0) throw conflict('There is nobody else in this conversation to call');
    const now = deps.now();
    const id = uuidv7();
    const ringExpiresAt = new Date(now.getTime() + deps.ringTimeoutSeconds * 1000);
    if (!(await calls.insertCall(tx, { id, conversationId, initiatorId: ctx.userId, now, ringExpiresAt, rung }))) {
      throw conflict('A call is already live in this conversation');
    }
    const call = (await calls.findCall(tx, id)) as Call;
    await postCallMessage(tx, ctx.requestId, call);
    return publish(tx, ctx, { subject: CALL_SUBJECTS.created, call, audience: access.audienceIds });
  });
  return { ...call, grant: await grantFor(deps, call, ctx.userId) };
}

/** The call, to the participants of its conversation; 404 to anyone else. */
export async function getCall(deps: Pick<CallDeps, 'pool'>, ctx: RequestContext, callId: string): Promise<Call> {
  const call = await calls.findCall(deps.pool, callId);
  if (!call || !(await conversationForParticipant(deps.pool, call.conversationId, ctx.userId))) throw notFound('Call');
  return call;
}

/** Answers a ringing call, or rejoins a live one left earlier; the call becomes active. */
export async function acceptCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<JoinedCall> {
  const call = await change(deps, ctx, callId, async (tx, current, audience) => {
    if (current.state === 'ended') throw conflict('The call has ended');
    await calls.setParticipantState(tx, callId, ctx.userId, 'joined');
    await calls.markAnswered(tx, callId, deps.now());
    return { subject: CALL_SUBJECTS.updated, audience };
  });
  return { ...call, grant: await grantFor(deps, call, ctx.userId) };
}

/** Declines a call ringing for the caller; a call that nobody answered ends when nobody is left ringing. */
export function declineCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<Call> {
  return change(deps, ctx, callId, async (tx, current, audience) => {
    if (stateOf(current, ctx.userId) !== 'ringing' || current.state === 'ended') throw conflict('The call is not ringing for you');
    await calls.setParticipantState(tx, callId, ctx.userId, 'declined');
    const stillRinging = current.participants.some((p) => p.userId !== ctx.userId && p.state === 'ringing');
    if (current.state === 'ringing' && !stillRinging) {
      await calls.markEnded(tx, callId, deps.now(), 'declined');
      return { subject: CALL_SUBJECTS.ended, audience };
    }
    return { subject: CALL_SUBJECTS.updated, audience };
  });
}

/** Leaves a call; the last one out ends it (the caller hanging up before anyone answered: missed). */
export function leaveCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<Call> {
  return change(deps, ctx, callId, async (tx, current, audience) => {
    if (stateOf(current, ctx.userId) !== 'joined' || current.state === 'ended') throw conflict('You are not in this call');
    await calls.setParticipantState(tx, callId, ctx.userId, 'left');
    const othersIn = current.participants.some((p) => p.userId !== ctx.userId && p.state === 'joined');
    if (othersIn) return { subject: CALL_SUBJECTS.updated, audience };
    await calls.markEnded(tx, callId, deps.now(), current.answeredAt ? 'completed' : 'missed');
    return { subject: CALL_SUBJECTS.ended, audience };
  });
}

/**
 * Ends as missed every call still ringing past its time, once even with several replicas (each
 * locks what it ends and skips what another holds). Answers how many it ended.
 */
export async function endUnansweredCalls(deps: Pick<CallDeps, 'pool'>, now: Date): Promise<number> {
  // Most rounds find nothing due: one statement then, not a transaction's three round trips.
  if (!(await calls.anyUnansweredCall(deps.pool, now))) return 0;
  return withTx(deps.pool, async (tx) => {
    const due = await calls.lockUnansweredCalls(tx, now, 100);
    for (const id of due) {
      await calls.markEnded(tx, id, now, 'missed');
      const call = (await calls.findCall(tx, id)) as Call;
      const audience = await postCallMessage(tx, undefined, call);
      await enqueueEvent(tx, CALL_SUBJECTS.ended, { call, participantIds: audience } satisfies CallEvent);
    }
    return due.length;
  });
}

/** Runs endUnansweredCalls every `intervalMs` until stopped. */
export function startCallClock(deps: Pick<CallDeps, 'pool' | 'now'> & { log?: { error(o: object, m: string): void } }, intervalMs = 1_000) {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => endUnansweredCalls(deps, deps.now())).catch((err) => deps.log?.error({ err }, 'call clock round failed'));
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** A change to a call under its row lock, by a participant of its conversation (404 for anyone else). */
async function change(
  deps: CallDeps,
  ctx: RequestContext,
  callId: string,
  apply: (tx: Queryable, call: Call, audience: string[]) => Promise<Omit<Change, 'call'>>,
): Promise<Call> {
  return withTx(deps.pool, async (tx) => {
    // The conversation's row lock before the call's, in the order a ring takes them: a change that
    // ends the call writes a message there, and the other order could deadlock with a new ring.
    const found = await calls.findCall(tx, callId);
    const access = found && (await conversationForParticipant(tx, found.conversationId, ctx.userId, { lock: true }));
    if (!found || !access) throw notFound('Call');
    const current = (await calls.findCall(tx, callId, { lock: true })) as Call;
    const { subject, audience } = await apply(tx, current, access.participantIds);
    const call = (await calls.findCall(tx, callId)) as Call;
    if (call.state === 'ended') await postCallMessage(tx, ctx.requestId, call);
    return publish(tx, ctx, { subject, audience, call });
  });
}

/**
 * The call's system message in its conversation (whose row lock the caller holds): `call_started`
 * while it rings, then `call_missed` (nobody answered, or everyone declined) or `call_ended` with
 * its duration. Its author is the caller, so it reaches whom the caller's messages reach (not who
 * blocked them), as a DM_MESSAGE_CREATE like any message. Answers that audience.
 */
async function postCallMessage(tx: Queryable, requestId: string | undefined, call: Call): Promise<string[]> {
  const conversation = await lockConversation(tx, call.conversationId);
  // A caller who has left the group since still signs the message; then everyone left gets it.
  const caller = await conversationForParticipant(tx, call.conversationId, call.initiatorId);
  const audienceIds = caller?.audienceIds ?? conversation.participantIds;
  const type = callMessageType(call);
  const durationSeconds = type === 'call_ended' ? secondsBetween(call.createdAt, call.endedAt as string) : null;
  const message = {
    senderId: call.initiatorId,
    content: '',
    attachments: {},
    replyToId: null,
    type,
    call: { id: call.id, durationSeconds },
  };
  await writeMessage(tx, requestId, { ...conversation, audienceIds }, message);
  return audienceIds;
}

function callMessageType(call: Call): 'call_started' | 'call_missed' | 'call_ended' {
  if (call.state !== 'ended') return 'call_started';
  return call.endReason === 'completed' ? 'call_ended' : 'call_missed';
}

const secondsBetween = (from: string, to: string) => Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000));

async function publish(tx: Queryable, ctx: RequestContext, c: Change): Promise<Call> {
  await enqueueEvent(tx, c.subject, { call: c.call, participantIds: c.audience } satisfies CallEvent, ctx.requestId);
  return c.call;
}

const stateOf = (call: Call, userId: string) => call.participants.find((p) => p.userId === userId)?.state;

/** The media grant for the call's room: in a call everyone may speak. */
function grantFor(deps: Pick<CallDeps, 'issueMediaGrant'>, call: Call, userId: string) {
  return deps.issueMediaGrant({ room: call.id, identity: userId, canPublish: true });
}
