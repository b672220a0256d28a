import { TokenVerifier } from 'livekit-server-sdk';
import { describe, expect, it } from 'vitest';
import { mediaGrantConfig, mediaGrantIssuer } from '../src/media-grants.ts';

const issue = mediaGrantIssuer(mediaGrantConfig.parse({}));
const verifier = new TokenVerifier('devkey', 'secret');
const videoOf = async (grant: Parameters<typeof issue>[0]) => (await verifier.verify((await issue(grant)).token)).video;

describe('media grants', () => {
  it('names no sources unless told, so a publisher may publish every source', async () => {
    const video = await videoOf({ room: 'r', identity: 'u', canPublish: true });
    expect(video).toEqual({ room: 'r', roomJoin: true, canSubscribe: true, canPublish: true, canPublishData: true });
  });

  it('carries the sources it is given, by LiveKit names', async () => {
    expect(await videoOf({ room: 'r', identity: 'u', canPublish: true, canPublishSources: ['microphone'] })).toMatchObject({
      canPublish: true,
      canPublishSources: ['microphone'],
    });
    const all = ['camera', 'microphone', 'screen_share', 'screen_share_audio'] as const;
    expect((await videoOf({ room: 'r', identity: 'u', canPublish: true, canPublishSources: all }))?.canPublishSources).toEqual(all);
  });

  it('names no sources on a grant that may not publish (LiveKit lets sources supersede canPublish)', async () => {
    const video = await videoOf({ room: 'r', identity: 'u', canPublish: false, canPublishSources: ['microphone'] });
    expect(video).toMatchObject({ canPublish: false, canPublishData: false });
    expect(video?.canPublishSources).toBeUndefined();
  });
});
