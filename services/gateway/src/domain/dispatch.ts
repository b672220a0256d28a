import {
  AccountUpdatedData,
  ActivityUpdatedEvent,
  AUTH_SUBJECTS,
  CALL_SUBJECTS,
  ChannelHiddenEventData,
  ChannelRevealedEventData,
  ConversationCreatedEvent,
  DISPATCH_NAMES,
  DISPATCH_PAYLOADS,
  type DispatchName,
  GUILDS_SUBJECTS,
  PresenceChosenEvent,
  READ_STATE_SUBJECTS,
  REALTIME_SUBJECTS,
  type SelfUser,
  SOCIAL_SUBJECTS,
  VOICE_SUBJECTS,
} from '@chat/contracts';
import type { EventEnvelope } from '@chat/kit';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { type Audience, outdatesAudiences, type Recipients } from './audience.ts';
import type { Fence } from './dispatch-lease.ts';
import { type PersonalDispatch, personalDispatches } from './personal.ts';
import { type Presence, seenByViewer } from './presence.ts';
import { FENCED_OFF, type SessionStore, STALE_AUDIENCE } from './session-store.ts';

/** The events whose payload carries the record under a field (the rest is who receives it): subject -> field. */
const WRAPPED: Readonly<Record<string, string>> = {
  [SOCIAL_SUBJECTS.dmCreated]: 'message',
  [SOCIAL_SUBJECTS.dmUpdated]: 'message',
  [CALL_SUBJECTS.created]: 'call',
  [CALL_SUBJECTS.updated]: 'call',
  [CALL_SUBJECTS.ended]: 'call',
  [READ_STATE_SUBJECTS.readStateUpdated]: 'readState',
  [READ_STATE_SUBJECTS.notificationCreated]: 'notification',
};

type Deps = {
  store: SessionStore;
  audience: Audience;
  presence: Presence;
  log: Logger;
  /** The account as its owner sees it now (auth's `rpc.auth.user.get`, as READY's `user`). */
  account: (userId: string) => Promise<z.output<typeof SelfUser>>;
};

/** A delivery was refused because another replica holds the stream readers' lease now. */
export class FencedOff extends Error {
  constructor() {
    super('the dispatch lease is held by another replica');
  }
}

/** Where an event came from: its time on JetStream (the replicas measure the dispatch lag from it) and the reader's fence. */
export type EventSource = { publishedAtMs?: number; fence?: Fence };

/** A delivery sent before those in flight were answered (see send). */
export type Sent = {
  /** The event id the delivery marks when it lands: a later one sent meanwhile names it as `after`. */
  mark?: string;
  /** The store's answer: sessions reached, or DUPLICATE, STALE_AUDIENCE, FENCED_OFF, OUT_OF_ORDER. */
  outcome: Promise<number>;
};

/** The dispatch an event's subject becomes, if any. */
export const dispatchNameOf = (subject: string): DispatchName | undefined => (DISPATCH_NAMES as Record<string, DispatchName>)[subject];

/**
 * Turns one domain event into dispatches (`dispatch`): outdated audiences first, then the payload
 * parsed by its dispatch schema (nothing the contract does not name leaves the gateway), then one
 * numbered dispatch into each recipient's sessions, refused when a cached audience's versions moved
 * (then computed again). The event id makes a redelivery change nothing; a fence that no longer
 * holds makes it throw FencedOff, having delivered nothing. `send` is the pipelined form of the
 * common case, for the stream readers.
 */
export function createDispatcher(deps: Deps) {
  const seenBy = seenByViewer(deps.presence, deps.audience.acquaintances);
  async function dispatch(event: EventEnvelope, source: EventSource = {}): Promise<void> {
    await deps.audience.invalidate(event.subject, event.data);
    const presenceChange = PRESENCE_CHANGES[event.subject];
    if (presenceChange) {
      if (!(await presenceChange(deps.presence, event.data, source.fence))) throw new FencedOff();
      return;
    }
    const perRecipient = perRecipientDelivery[event.subject];
    if (perRecipient) return perRecipient(event, source);
    const name = dispatchNameOf(event.subject);
    if (!name) return;
    const personal = personalDispatches(event.subject, event.data);
    if (personal) return deliverPersonal(deps, event, name, personal, source);
    const payload = parsePayload(deps.log, event, name, await shownRecord(event));
    if (payload === undefined) return;
    await deliverTo(name, payload, event.id, (fresh) => deps.audience.recipients(event.subject, event.data, { fresh }), source);
    if (event.subject === VOICE_SUBJECTS.moved) await deliverLeftBehind(event, source);
  }

  /** One numbered dispatch into the audience's sessions; asked again (fresh) when the cached audience was refused. */
  async function deliverTo(
    name: DispatchName,
    payload: string,
    dedupeId: string,
    audienceOf: (fresh: boolean) => Promise<Recipients>,
    source: EventSource,
  ): Promise<void> {
    const deliver = (recipients: Recipients) =>
      deps.store.deliver(name, payload, { ...recipients, fence: source.fence }, dedupeId, source.publishedAtMs).then(unlessFencedOff);
    if ((await deliver(await audienceOf(false))) !== STALE_AUDIENCE) return;
    await deliver(await audienceOf(true));
  }

  /**
   * Who saw the user in the channel they were moved from, and cannot see the one they were moved
   * to, sees them leave (VOICE_STATE_DELETE, `switched`): REST no longer shows them the state.
   */
  async function deliverLeftBehind(event: EventEnvelope, source: EventSource): Promise<void> {
    // Checked below: the payload is parsed by VOICE_STATE_DELETE's schema.
    const moved = event.data as { userId: string; serverId: string; channelId: string; fromChannelId: string };
    const left = { userId: moved.userId, serverId: moved.serverId, channelId: moved.fromChannelId, reason: 'switched' };
    const payload = parsePayload(deps.log, event, 'VOICE_STATE_DELETE', left);
    if (payload === undefined) return;
    const audienceOf = (fresh: boolean) => deps.audience.leftBehind(moved, { fresh });
    await deliverTo('VOICE_STATE_DELETE', payload, `${event.id}:left`, audienceOf, source);
  }

  /** The record the event's dispatch shows; a member with what others see of them now, as REST lists members. */
  async function shownRecord(event: EventEnvelope): Promise<unknown> {
    const record = recordOf(event);
    if (!SHOWS_MEMBER.has(event.subject)) return record;
    const { userId } = record as { userId: string };
    const seen = (await deps.presence.shown([userId]))[userId];
    return { ...(record as object), status: seen?.status ?? 'offline', ...(seen?.activity ? { activity: seen.activity } : {}) };
  }

  /**
   * The account as its owner sees it now, to the owner's sessions alone (USER_UPDATE): asked of
   * auth when dispatched, so the email never travels on the bus, and a burst of changes shows the
   * latest account each time.
   */
  async function deliverAccount(event: EventEnvelope, source: EventSource): Promise<void> {
    const { userId } = AccountUpdatedData.parse(event.data);
    const payload = parsePayload(deps.log, event, 'USER_UPDATE', await deps.account(userId));
    if (payload === undefined) return;
    const targets = { userIds: [userId], fence: source.fence };
    unlessFencedOff(await deps.store.deliver('USER_UPDATE', payload, targets, event.id, source.publishedAtMs));
  }

  /**
   * A new conversation to each participant as their list shows it: the others' status as that
   * participant may see it (a stranger in a group shows offline), as REST's list answers.
   */
  async function deliverConversation(event: EventEnvelope, source: EventSource): Promise<void> {
    const { conversation, participantIds } = ConversationCreatedEvent.parse(event.data);
    const userIds = conversation?.participants.map((p) => p.id) ?? [];
    for (const viewerId of participantIds) {
      const statuses = await seenBy(userIds, viewerId);
      const shown = conversation && {
        ...conversation,
        participants: conversation.participants.map((p) => ({ ...p, status: statuses[p.id] ?? 'offline' })),
      };
      const payload = parsePayload(deps.log, event, 'DM_CONVERSATION_CREATE', shown);
      if (payload === undefined) return;
      const targets = { userIds: [viewerId], fence: source.fence };
      unlessFencedOff(
        await deps.store.deliver('DM_CONVERSATION_CREATE', payload, targets, `${event.id}:${viewerId}`, source.publishedAtMs),
      );
    }
  }

  /**
   * A change of who sees which channels: each channel its own dispatch (CHANNEL_CREATE with the
   * channel to those who gained it, CHANNEL_DELETE with its id to those who lost it), to the members
   * guilds named, one delivery id per channel so that a redelivery changes nothing.
   */
  async function deliverViewChange(event: EventEnvelope, source: EventSource): Promise<void> {
    const revealed = event.subject === GUILDS_SUBJECTS.channelRevealed;
    const name = revealed ? 'CHANNEL_CREATE' : 'CHANNEL_DELETE';
    const { userIds, records } = revealed
      ? viewGain(ChannelRevealedEventData.parse(event.data))
      : viewLoss(ChannelHiddenEventData.parse(event.data));
    for (const record of records) {
      const payload = parsePayload(deps.log, event, name, record);
      if (payload !== undefined) await deliverTo(name, payload, `${event.id}:${record.id}`, async () => ({ userIds }), source);
    }
  }

  /** The events whose dispatch is made for each recipient, from what is asked when it is dispatched. */
  const perRecipientDelivery: Readonly<Record<string, (event: EventEnvelope, source: EventSource) => Promise<void>>> = {
    [AUTH_SUBJECTS.accountUpdated]: deliverAccount,
    [SOCIAL_SUBJECTS.conversationCreated]: deliverConversation,
    [GUILDS_SUBJECTS.channelRevealed]: deliverViewChange,
    [GUILDS_SUBJECTS.channelHidden]: deliverViewChange,
  };

  /**
   * The event's one delivery, sent without waiting for the answers of those before it: the store
   * refuses it unless the delivery marked `after` landed, so a stream's dispatches keep their order.
   * Undefined for an event that changes something before it delivers (presence, the versions of
   * who sees what) or delivers a record per user: it goes through dispatch, once those before it
   * are answered. The answer is not awaited here; a refused delivery is dispatched again by the caller.
   */
  async function send(event: EventEnvelope, source: EventSource & { after?: string }): Promise<Sent | undefined> {
    const { subject, data } = event;
    if (subject in PRESENCE_CHANGES || subject in perRecipientDelivery || outdatesAudiences(subject) || personalDispatches(subject, data))
      return undefined;
    const name = dispatchNameOf(subject);
    const payload = name && parsePayload(deps.log, event, name, await shownRecord(event));
    if (!name || payload === undefined) return { outcome: Promise.resolve(0) };
    const recipients = await deps.audience.recipients(subject, data);
    const targets = { ...recipients, fence: source.fence, after: source.after };
    return { mark: event.id, outcome: deps.store.deliver(name, payload, targets, event.id, source.publishedAtMs) };
  }

  return { dispatch, send };
}

function viewGain({ channels, userIds }: z.output<typeof ChannelRevealedEventData>) {
  return { userIds, records: channels };
}

function viewLoss({ serverId, ids, userIds }: z.output<typeof ChannelHiddenEventData>) {
  return { userIds, records: ids.map((id) => ({ id, serverId })) };
}

/** The events whose record is a member (SERVER_MEMBER_ADD, SERVER_MEMBER_UPDATE). */
const SHOWS_MEMBER: ReadonlySet<string> = new Set([GUILDS_SUBJECTS.memberJoined, GUILDS_SUBJECTS.memberUpdated]);

/** The record an event's dispatch shows: its payload, or the field of it that holds the record. */
function recordOf(event: EventEnvelope): unknown {
  const field = WRAPPED[event.subject];
  return field ? (event.data as Record<string, unknown>)[field] : event.data;
}

function unlessFencedOff(outcome: number): number {
  if (outcome === FENCED_OFF) throw new FencedOff();
  return outcome;
}

/**
 * The events that change what others see of a user (PRESENCE_UPDATE follows from the change), and
 * how each is applied: false when the fence no longer held, and nothing was.
 */
const PRESENCE_CHANGES: Readonly<Record<string, (presence: Presence, data: unknown, fence?: Fence) => Promise<boolean>>> = {
  [REALTIME_SUBJECTS.presenceUpdated]: (presence, data, fence) => {
    const chosen = PresenceChosenEvent.parse(data);
    return presence.chose(chosen.userId, chosen.status, chosen.customStatus, fence);
  },
  [REALTIME_SUBJECTS.activityUpdated]: (presence, data, fence) => {
    const { userId, activity } = ActivityUpdatedEvent.parse(data);
    return presence.activity(userId, activity, fence);
  },
};

/** The payload as JSON once parsed by its dispatch schema; undefined (logged) when it breaks it. */
function parsePayload(log: Logger, event: EventEnvelope, name: DispatchName, raw: unknown): string | undefined {
  const parsed = DISPATCH_PAYLOADS[name].safeParse(raw);
  if (parsed.success) return JSON.stringify(parsed.data);
  log.error({ eventId: event.id, subject: event.subject, issue: parsed.error.issues[0] }, 'event breaks its contract; not dispatched');
  return undefined;
}

/**
 * Each side's own record, showing the other user as their REST list does: a friend live (status,
 * activity); anyone else (a request's other side, someone blocked or unfriended) as this side may
 * see them now, so a stranger shows offline, as to the socket's presence and the lists.
 */
async function deliverPersonal(deps: Deps, event: EventEnvelope, name: DispatchName, dispatches: PersonalDispatch[], source: EventSource) {
  const shown = await deps.presence.shown(dispatches.map((p) => p.record.user.id));
  const mayBeStranger = ({ userId, record, withActivity }: PersonalDispatch) =>
    !withActivity && (shown[record.user.id]?.status ?? 'offline') !== 'offline' && record.user.id !== userId;
  const known = async (p: PersonalDispatch) => (await deps.audience.acquaintances(p.userId)).includes(p.record.user.id);
  for (const dispatch of dispatches) {
    const { userId, record, withActivity } = dispatch;
    const other = shown[record.user.id];
    const activity = withActivity && other?.activity ? { activity: other.activity } : {};
    const status = mayBeStranger(dispatch) && !(await known(dispatch)) ? 'offline' : (other?.status ?? 'offline');
    const raw = { ...record, ...activity, user: { ...record.user, status } };
    const payload = parsePayload(deps.log, event, name, raw);
    if (payload === undefined) continue;
    const targets = { userIds: [userId], fence: source.fence };
    unlessFencedOff(await deps.store.deliver(name, payload, targets, `${event.id}:${userId}`, source.publishedAtMs));
  }
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
