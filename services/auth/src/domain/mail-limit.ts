import { withTx } from '@chat/kit';
import * as codes from '../db/codes.ts';
import type { AuthDomainDeps } from '../deps.ts';
import type { Mail } from './mailer.ts';

/**
 * Sends a mail unless its address already got MAILS_PER_ADDRESS_PER_HOUR within the last hour:
 * registering, resending and resetting cannot be used to flood an inbox. A capped mail is
 * dropped silently (the answer must not tell an address's mail count); false says so.
 */
export async function sendCapped(deps: AuthDomainDeps, mail: Mail): Promise<boolean> {
  const allowed = await withTx(deps.pool, (tx) => codes.claimMailSlot(tx, mail.to, deps.config.MAILS_PER_ADDRESS_PER_HOUR));
  if (!allowed) {
    deps.log.info({ subject: mail.subject }, 'mail not sent: its address reached the hourly limit');
    return false;
  }
  await deps.mailer.send(mail);
  return true;
}
