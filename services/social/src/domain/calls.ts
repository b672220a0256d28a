import { CALL_SUBJECTS, type Call, type CallEvent, isId, type JoinedCall } from '@chat/contracts';
import {
  checkRoomsPeriodically,
  conflict,
  enqueueEvent,
  forbidden,
  type IssueMediaGrant,
  type Logger,
  type MediaRooms,
  notFound,
  type Periodic,
  type Pool,
  type Queryable,
  type RequestContext,
  repeatEvery,
  withTx,
} from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import * as calls from '../db/calls.ts';
import { type ConversationAccess, conversationForParticipant, lockConversation, pairConversationId } from '../db/conversations.ts';
import { participantAccess } from './conversations.ts';
import { writeMessage } from './messages.ts';
import { callEnded } from './notifications.ts';

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

type Subject = (typeof CALL_SUBJECTS)[keyof typeof CALL_SUBJECTS];

const BLOCKED_CALL = 'You cannot call this user: one of you has blocked the other';

export async function startCall(deps: CallDeps, ctx: RequestContext, conversationId: string): Promise<JoinedCall> {
  const call = await withTx(deps.pool, async (tx) => {
    const access = await participantAccess(tx, ctx, conversationId, { lock: true });
    if (access.blocked) throw forbidden(BLOCKED_CALL);
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
    return publish(tx, ctx, CALL_SUBJECTS.created, call, access.audienceIds);
  });
  return { ...call, grant: await grantFor(deps, call, ctx.userId) };
}

/** The call, to the participants of its conversation; 404 to anyone else. */
export async function getCall(deps: Pick<CallDeps, 'pool'>, ctx: RequestContext, callId: string): Promise<Call> {
  const call = await calls.findCall(deps.pool, callId);
  if (!call || !(await conversationForParticipant(deps.pool, call.conversationId, ctx.userId))) throw notFound('Call');
  return call;
}

/**
 * Answers a call ringing for the caller, or rejoins a live one left (or declined) earlier; the call
 * becomes active. Whoever is in it already (the one who rang above all) only gets a fresh grant, to
 * reconnect to the room: their "accept" changes nothing, so a ring nobody answered still ends as missed.
 */
export async function acceptCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<JoinedCall> {
  const call = await change(deps, ctx, callId, async (tx, current, access) => {
    if (current.state === 'ended') throw conflict('The call has ended');
    // As a ring: a block in a 1:1 conversation hands out no grant for its room, also to someone who left and comes back.
    if (access.blocked) throw forbidden(BLOCKED_CALL);
    if (stateOf(current, ctx.userId) === 'joined') return undefined;
    await calls.setParticipantState(tx, callId, ctx.userId, 'joined');
    await calls.markAnswered(tx, callId, deps.now());
    return CALL_SUBJECTS.updated;
  });
  return { ...call, grant: await grantFor(deps, call, ctx.userId) };
}

/** Declines a call ringing for the caller; a call that nobody answered ends when nobody is left ringing. */
export function declineCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<Call> {
  return change(deps, ctx, callId, async (tx, current) => {
    if (stateOf(current, ctx.userId) !== 'ringing' || current.state === 'ended') throw conflict('The call is not ringing for you');
    return decline(tx, current, ctx.userId, deps.now());
  });
}

/** Leaves a call; the last one out ends it (the caller hanging up before anyone answered: missed). */
export function leaveCall(deps: CallDeps, ctx: RequestContext, callId: string): Promise<Call> {
  return change(deps, ctx, callId, async (tx, current) => {
    if (stateOf(current, ctx.userId) !== 'joined' || current.state === 'ended') throw conflict('You are not in this call');
    return hangUp(tx, current, ctx.userId, deps.now());
  });
}

/**
 * Takes the caller, about to leave the conversation of `access` (whose row lock the transaction
 * holds), out of its live call as their own leave (joined) or decline (rung) would, with the same
 * events and message: once out of the conversation they could not do either, and a call they
 * stayed joined in would never end.
 */
export async function leaveLiveCall(tx: Queryable, ctx: RequestContext, access: ConversationAccess, now: Date): Promise<void> {
  const [live] = await calls.liveCallsOf(tx, [access.id]);
  if (!live) return;
  const current = (await calls.findCall(tx, live.id, { lock: true })) as Call;
  const state = current.state === 'ended' ? undefined : stateOf(current, ctx.userId);
  if (state === 'joined') await settle(tx, ctx, current.id, await hangUp(tx, current, ctx.userId, now), access);
  if (state === 'ringing') await settle(tx, ctx, current.id, await decline(tx, current, ctx.userId, now), access);
}

/**
 * The caller, who has just blocked `otherId` in this transaction, leaves the live call of their
 * 1:1 conversation as their own leave (or decline) would: a block hands out no grant for the room
 * (acceptCall), so staying in would only keep the two connected. To the other it looks like a hang-up,
 * so the block stays private. The conversation's lock is taken whether or not a call is live: a
 * ring racing the block then either sees it (403) or is left here.
 */
export async function leaveDirectCallWith(tx: Queryable, ctx: RequestContext, otherId: string, now: Date): Promise<void> {
  const conversationId = await pairConversationId(tx, ctx.userId, otherId);
  if (!conversationId) return;
  await leaveLiveCall(tx, ctx, await participantAccess(tx, ctx, conversationId, { lock: true }), now);
}

/** `userId` declines; a call nobody answered ends (declined) when nobody is left ringing. */
async function decline(tx: Queryable, call: Call, userId: string, now: Date): Promise<Subject> {
  await calls.setParticipantState(tx, call.id, userId, 'declined');
  const stillRinging = call.participants.some((p) => p.userId !== userId && p.state === 'ringing');
  if (call.state === 'ringing' && !stillRinging) {
    await calls.markEnded(tx, call.id, now, 'declined');
    return CALL_SUBJECTS.ended;
  }
  return CALL_SUBJECTS.updated;
}

/** `userId` leaves; the last one out ends the call (`missed` when nobody had answered). */
async function hangUp(tx: Queryable, call: Call, userId: string, now: Date): Promise<Subject> {
  await calls.setParticipantState(tx, call.id, userId, 'left');
  const othersIn = call.participants.some((p) => p.userId !== userId && p.state === 'joined');
  if (othersIn) return CALL_SUBJECTS.updated;
  await calls.markEnded(tx, call.id, now, call.answeredAt ? 'completed' : 'missed');
  return CALL_SUBJECTS.ended;
}

/**
 * Stops every ring past its time, once even with several replicas (each locks what it changes and
 * skips what another holds): a call nobody answered ends as missed; in a call answered meanwhile,
 * whoever it still rings missed it. Answers how many calls it changed.
 */
export async function endUnansweredCalls(deps: Pick<CallDeps, 'pool'>, now: Date): Promise<number> {
  // Most rounds find nothing due: one statement then, not a transaction's three round trips.
  if (!(await calls.anyUnansweredCall(deps.pool, now))) return 0;
  return withTx(deps.pool, async (tx) => {
    const due = await calls.lockUnansweredCalls(tx, now, 100);
    for (const id of due) {
      const call = (await calls.findCall(tx, id)) as Call;
      if (call.state === 'ringing') await endMissed(tx, call, now);
      else await stopRinging(tx, call, now);
    }
    return due.length;
  });
}

/** A call nobody answered in time ends as missed, with its call_missed message. */
async function endMissed(tx: Queryable, rung: Call, now: Date): Promise<void> {
  await calls.markEnded(tx, rung.id, now, 'missed');
  const call = (await calls.findCall(tx, rung.id)) as Call;
  const audience = await postCallMessage(tx, undefined, call);
  await enqueueEvent(tx, CALL_SUBJECTS.ended, { call, participantIds: audience } satisfies CallEvent);
}

/**
 * The ring of an answered call is over: those it still rings stop ringing (declined: the state a
 * participant has for a ring they did not take; they may still join) and, as for a call that ends
 * while ringing them, get their missed_call entry, written here from the call as it rang them (the
 * notifications consumer hears only of ended calls).
 */
async function stopRinging(tx: Queryable, rung: Call, now: Date): Promise<void> {
  const audience = await callerAudience(tx, rung, await lockConversation(tx, rung.conversationId));
  await callEnded(tx, { call: rung, participantIds: audience }, now.toISOString());
  await calls.declineStillRinging(tx, rung.id);
  const call = (await calls.findCall(tx, rung.id)) as Call;
  await enqueueEvent(tx, CALL_SUBJECTS.updated, { call, participantIds: audience } satisfies CallEvent);
}

/** Runs endUnansweredCalls every `intervalMs` until stopped. */
export function startCallClock(deps: Pick<CallDeps, 'pool' | 'now'>, log: Logger, intervalMs = 1_000): Periodic {
  return repeatEvery(intervalMs, () => endUnansweredCalls(deps, deps.now()), log, 'call clock round');
}

/**
 * Brings the call rooms into line (checkCallRooms, see checkRoomsPeriodically). Every replica may
 * run one: a removal one made, the others no longer find.
 */
export function startCallRoomCheck(pool: Pool, rooms: MediaRooms, log: Logger): Periodic {
  return checkRoomsPeriodically((options) => checkCallRooms(rooms, pool, options), log, 'call room check');
}

/**
 * A change to a call under its row lock, by a participant of its conversation (404 for anyone else);
 * `apply` answers the event's subject, or undefined when it changed nothing (no event, the call as it is).
 */
async function change(
  deps: CallDeps,
  ctx: RequestContext,
  callId: string,
  apply: (tx: Queryable, call: Call, access: ConversationAccess) => Promise<Subject | undefined>,
): Promise<Call> {
  return withTx(deps.pool, async (tx) => {
    // The conversation's row lock before the call's, in the order a ring takes them: a change that
    // ends the call writes a message there, and the other order could deadlock with a new ring.
    const found = await calls.findCall(tx, callId);
    const access = found && (await conversationForParticipant(tx, found.conversationId, ctx.userId, { lock: true }));
    if (!found || !access) throw notFound('Call');
    const current = (await calls.findCall(tx, callId, { lock: true })) as Call;
    const subject = await apply(tx, current, access);
    return subject ? settle(tx, ctx, callId, subject, access) : current;
  });
}

/** After a change by the caller (`access` is theirs): the message of a call that ended, and the event. */
async function settle(tx: Queryable, ctx: RequestContext, callId: string, subject: Subject, access: ConversationAccess): Promise<Call> {
  const call = (await calls.findCall(tx, callId)) as Call;
  if (call.state === 'ended') await postCallMessage(tx, ctx.requestId, call);
  return publish(tx, ctx, subject, call, await audienceOf(tx, call, ctx.userId, access));
}

/**
 * Who hears of a change to a call: the participants who did not block the one who changed it and,
 * of those who blocked the caller, only someone who joined the call anyway: the ring did not reach
 * them (startCall), so neither does the rest of the call.
 */
async function audienceOf(tx: Queryable, call: Call, actorId: string, actor: ConversationAccess): Promise<string[]> {
  if (actorId === call.initiatorId) return actor.audienceIds;
  // A caller who has left the group since blocks nobody out of it any more.
  const caller = await conversationForParticipant(tx, call.conversationId, call.initiatorId);
  const reached = new Set([...(caller?.audienceIds ?? actor.participantIds), ...call.participants.map((p) => p.userId)]);
  return actor.audienceIds.filter((id) => reached.has(id));
}

/**
 * The call's system message in its conversation (whose row lock the caller holds): `call_started`
 * while it rings, then `call_missed` (nobody answered, or everyone declined) or `call_ended` with
 * its duration. Its author is the caller, so it reaches whom the caller's messages reach (not who
 * blocked them), as a DM_MESSAGE_CREATE like any message. Answers that audience.
 */
async function postCallMessage(tx: Queryable, requestId: string | undefined, call: Call): Promise<string[]> {
  const conversation = await lockConversation(tx, call.conversationId);
  const audienceIds = await callerAudience(tx, call, conversation);
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

/**
 * Whom the caller's messages in the call's conversation (locked by the caller) reach: not who
 * blocked them. A caller who has left the group since reaches everyone left.
 */
async function callerAudience(tx: Queryable, call: Call, conversation: { participantIds: string[] }): Promise<string[]> {
  const caller = await conversationForParticipant(tx, call.conversationId, call.initiatorId);
  return caller?.audienceIds ?? conversation.participantIds;
}

function callMessageType(call: Call): 'call_started' | 'call_missed' | 'call_ended' {
  if (call.state !== 'ended') return 'call_started';
  return call.endReason === 'completed' ? 'call_ended' : 'call_missed';
}

const secondsBetween = (from: string, to: string) => Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000));

async function publish(tx: Queryable, ctx: RequestContext, subject: Subject, call: Call, audience: string[]): Promise<Call> {
  await enqueueEvent(tx, subject, { call, participantIds: audience } satisfies CallEvent, ctx.requestId);
  return call;
}

/**
 * Brings the media server in line with the call, under the call's row lock (a rejoin racing this
 * waits, so the event of an earlier leave never takes out someone who came back): an ended call's
 * room closes, disconnecting anyone still in it; in a live call, whoever of `connected` is not in
 * the call is taken out of the room. Without `connected`, whoever left: a grant goes only with
 * joining (starting or accepting), so nobody else can be connected.
 */
export async function syncCallMedia(rooms: MediaRooms, tx: Queryable, callId: string, connected?: readonly string[]): Promise<void> {
  const call = await calls.findCall(tx, callId, { lock: true });
  if (!call || call.state === 'ended') return rooms.close(callId);
  const candidates = connected ?? call.participants.filter((p) => p.state === 'left').map((p) => p.userId);
  for (const userId of candidates) if (stateOf(call, userId) !== 'joined') await rooms.remove(call.id, userId);
}

/**
 * Brings into line every call room where LiveKit has someone who is not in the call (or a call that
 * ended): the events do it at once (syncCallMedia); this catches a client that connects again
 * afterwards with a grant from before, since LiveKit cannot revoke a token and refreshes a connected
 * participant's every 5 minutes for 10. Rooms that are no call (a voice channel's, guilds') are left
 * alone. With `recentChanges`, only the rooms this replica took someone out of or closed lately
 * (see MediaRooms.occupied), which are all call rooms: one whose call is gone (its group deleted)
 * is closed again. Answers how many rooms it brought into line.
 */
export async function checkCallRooms(rooms: MediaRooms, pool: Pool, options?: { recentChanges?: boolean }): Promise<number> {
  const occupied = (await rooms.occupied(options)).filter(({ room }) => isId(room));
  const found = await calls.findCalls(
    pool,
    occupied.map((o) => o.room),
  );
  const known = new Map(found.map((call) => [call.id, call]));
  const strays = occupied.filter(({ room, occupants }) => {
    const call = known.get(room);
    if (!call) return options?.recentChanges === true;
    return occupants.some(({ identity }) => call.state === 'ended' || stateOf(call, identity) !== 'joined');
  });
  for (const { room, occupants } of strays) {
    await withTx(pool, (tx) =>
      syncCallMedia(
        rooms,
        tx,
        room,
        occupants.map((o) => o.identity),
      ),
    );
  }
  return strays.length;
}

const stateOf = (call: Call, userId: string) => call.participants.find((p) => p.userId === userId)?.state;

/** The media grant for the call's room: in a call everyone may speak. */
function grantFor(deps: Pick<CallDeps, 'issueMediaGrant'>, call: Call, userId: string) {
  return deps.issueMediaGrant({ room: call.id, identity: userId, canPublish: true });
}
