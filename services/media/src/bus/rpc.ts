import { MediaFileRpc } from '@chat/contracts';
import { serveRpc } from '@chat/kit';
import type { MediaDeps } from '../deps.ts';
import { describeFile } from '../domain/files.ts';

/** rpc.media.file.get: other services check an attachment against the stored record. */
export function serveMediaRpc(deps: MediaDeps): void {
  serveRpc(deps.bus, deps.log, MediaFileRpc, ({ id }) => describeFile(deps, id));
}
