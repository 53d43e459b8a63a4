import type { MessageStatus, StatusDetail } from './port.ts';

/** What a recorded message row shows of its last report (payment and campaign messages alike). */
export interface ReportedMessage {
  status: string;
  reply_text: string | null;
  replied_at: Date | string | null;
  provider_message_id: string | null;
}

export interface ReportMove {
  action: 'reply' | 'fail' | 'deliver';
  patch: { provider_message_id: string; reply_text?: string; replied_at?: Date; error?: string };
}

/**
 * How a provider's status report moves a recorded message, or null when it moves nothing: a reply
 * is new unless its text and time equal the last one recorded; delivered and failed move only a
 * message whose machine `takes` that action (a repeated or late report changes nothing). The
 * provider's message id is kept once known. Pure: each messages module applies the move to its
 * own table through its own state machine.
 */
export function reportMove(
  row: ReportedMessage,
  status: MessageStatus,
  detail: StatusDetail,
  providerMessageId: string,
  takes: (action: ReportMove['action']) => boolean,
): ReportMove | null {
  const provider = { provider_message_id: row.provider_message_id ?? providerMessageId };
  if (status === 'replied') {
    const text = detail.replyText ?? '';
    const repeated =
      row.status === 'replied' && row.reply_text === text && row.replied_at !== null && new Date(row.replied_at).getTime() === detail.at.getTime();
    if (repeated || !takes('reply')) return null;
    return { action: 'reply', patch: { ...provider, reply_text: text, replied_at: detail.at } };
  }
  const action = status === 'failed' ? 'fail' : 'deliver';
  if (!takes(action)) return null;
  return { action, patch: status === 'failed' ? { ...provider, error: detail.reason ?? 'failed' } : provider };
}
