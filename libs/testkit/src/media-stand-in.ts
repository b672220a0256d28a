import { MEDIA_RPC, type MediaFileReply, MediaFileRequest } from '@chat/contracts';
import { connectBus, notFound, serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { TestRuntime } from './runtime.ts';

export interface MediaStandIn {
  /** Records an upload as media would, and answers it on the bus. */
  upload(uploaderId: string, filename?: string, contentType?: string, size?: number): MediaFileReply;
  /** Takes it off the bus, as a media outage would. */
  stop(): Promise<void>;
}

/**
 * The media service's `rpc.media.file.get` contract served on a test's bus namespace over the
 * real NATS server, from an in-memory table: services that verify attachments are tested without
 * running media (whose own tests cover the real answer).
 */
export async function startMediaStandIn(runtime: Pick<TestRuntime, 'env' | 'namespace' | 'log'>): Promise<MediaStandIn> {
  const files = new Map<string, MediaFileReply>();
  const bus = await connectBus({ url: runtime.env.NATS_URL!, namespace: runtime.namespace, name: 'media-stand-in', log: runtime.log });
  serveRpc(bus, runtime.log, MEDIA_RPC.fileGet, MediaFileRequest, async ({ id }) => {
    const file = files.get(id);
    if (!file) throw notFound('File');
    return file;
  });
  await bus.nc.flush();
  return {
    upload(uploaderId, filename = 'photo.png', contentType = 'image/png', size = 1234) {
      const id = uuidv7();
      const file = {
        id,
        uploaderId,
        url: `http://media.example/v1/media/${id}/${filename}`,
        filename,
        contentType,
        size,
        durationSeconds: null,
      };
      files.set(id, file);
      return file;
    },
    async stop() {
      if (!bus.nc.isClosed()) await bus.nc.drain();
    },
  };
}
