/** Generated bank logos: the bank's initials on its colour, as a small square SVG. */

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** Black or white text, whichever reads better on the background (WCAG relative luminance). */
function textColor(hex: string): string {
  const n = Number.parseInt(hex.slice(1), 16);
  const channel = (v: number) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
  return luminance > 0.4 ? '#111111' : '#FFFFFF';
}

export function bankLogoSvg(bank: { name: string; logo_text: string; logo_color: string }): string {
  const size = bank.logo_text.length >= 4 ? 26 : bank.logo_text.length === 3 ? 32 : 40;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96" viewBox="0 0 96 96" role="img" aria-label="${escapeXml(bank.name)}">` +
    `<rect width="96" height="96" rx="20" fill="${bank.logo_color}"/>` +
    `<text x="48" y="50" font-family="Helvetica, Arial, sans-serif" font-size="${size}" font-weight="700" fill="${textColor(bank.logo_color)}" text-anchor="middle" dominant-baseline="central">${escapeXml(bank.logo_text)}</text>` +
    `</svg>`
  );
}

export function bankLogoDataUrl(bank: { name: string; logo_text: string; logo_color: string }): string {
  return `data:image/svg+xml;base64,${Buffer.from(bankLogoSvg(bank), 'utf8').toString('base64')}`;
}

export function bankLogoUrl(baseUrl: string, bankId: string): string {
  return `${baseUrl}/v1/banks/${bankId}/logo.svg`;
}
