import type { MediaHeader } from './media-header.ts';

/**
 * SPEC.md "Limits" for campaign media, as pure rules over what the bytes say (docs/campaigns.md
 * "Media rules"). Each broken rule is one message for the field that carried the URL.
 */
export const IMAGE_MAX_BYTES = 2 * 1024 * 1024;
export const VIDEO_MAX_BYTES = 16 * 1024 * 1024;
export const IMAGE_MIN_SHORT_SIDE = 600;
export const IMAGE_MAX_LONG_SIDE = 2048;

/**
 * The allowed shapes, as long side : short side. Either orientation is accepted (4:3 and 3:4,
 * 9:16 and 16:9, 2:3 and 3:2): a phone shows both, and SPEC.md names shapes, not orientations.
 */
export const IMAGE_RATIOS: readonly { long: number; short: number }[] = [
  { long: 4, short: 3 },
  { long: 16, short: 9 },
  { long: 3, short: 2 },
  { long: 1, short: 1 },
];

export type MediaType = 'image' | 'video';

export interface JudgedMedia {
  contentType: 'image/jpeg' | 'image/png' | 'video/mp4';
  bytes: number;
  width: number | null;
  height: number | null;
  /** The ratio matched, as width:height (`3:4` is a portrait 4:3), or null for a video. */
  ratio: string | null;
}

const MB = (n: number) => `${n / (1024 * 1024)} MB`;

/**
 * Whether `long:short` is the shape `r`, allowing one pixel of integer rounding on the short side
 * (a 4:3 image 2048 wide is 1536 high exactly; one 1000 wide is 750; one 1366 wide may be 1024 or
 * 1025 high): |long·r.short − short·r.long| ≤ r.long. Answers width:height, or null.
 */
export function ratioOf(width: number, height: number): string | null {
  const long = Math.max(width, height);
  const short = Math.min(width, height);
  const match = IMAGE_RATIOS.find((r) => Math.abs(long * r.short - short * r.long) <= r.long);
  if (!match) return null;
  return width >= height ? `${match.long}:${match.short}` : `${match.short}:${match.long}`;
}

/** The problems of an image or a video, or the facts about it when it passes every rule. */
export function judgeMedia(type: MediaType, header: MediaHeader, size: number): { problems: string[] } | { media: JudgedMedia } {
  if (type === 'video') {
    if (header.kind !== 'mp4')
      return {
        problems: [`must be an MP4 video (${header.kind === 'unknown' ? header.reason : `the file is a ${header.kind.toUpperCase()} image`})`],
      };
    if (size > VIDEO_MAX_BYTES) return { problems: [`must be at most ${MB(VIDEO_MAX_BYTES)}`] };
    return { media: { contentType: 'video/mp4', bytes: size, width: null, height: null, ratio: null } };
  }
  if (header.kind !== 'png' && header.kind !== 'jpeg') {
    return { problems: [`must be a JPEG or PNG image (${header.kind === 'unknown' ? header.reason : 'the file is an MP4 video'})`] };
  }
  const problems: string[] = [];
  if (size > IMAGE_MAX_BYTES) problems.push(`must be at most ${MB(IMAGE_MAX_BYTES)}`);
  const { width, height } = header;
  const long = Math.max(width, height);
  const short = Math.min(width, height);
  if (short < IMAGE_MIN_SHORT_SIDE) problems.push(`the short side must be at least ${IMAGE_MIN_SHORT_SIDE} px (the image is ${width}×${height})`);
  if (long > IMAGE_MAX_LONG_SIDE) problems.push(`the long side must be at most ${IMAGE_MAX_LONG_SIDE} px (the image is ${width}×${height})`);
  const ratio = ratioOf(width, height);
  if (!ratio) problems.push(`must have a ratio of 4:3, 9:16, 2:3 or 1:1, in either orientation (the image is ${width}×${height})`);
  if (problems.length) return { problems };
  return { media: { contentType: header.kind === 'png' ? 'image/png' : 'image/jpeg', bytes: size, width, height, ratio } };
}
