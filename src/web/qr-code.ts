import QRCode from 'qrcode';
import { trusted, type Html } from './html.ts';

/**
 * A QR code as inline SVG, drawn on the server (qrcode): no script, no image request, nothing
 * from another site. Named as an image for screen readers, which read the text beside it instead.
 */
export async function qrCodeSvg(text: string, label: string): Promise<Html> {
  const svg = await QRCode.toString(text, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
  // The library's markup, from our own text: only the opening tag is ours to extend.
  const named = svg.replace('<svg ', `<svg role="img" aria-label="${label.replace(/[&<>"']/g, '')}" focusable="false" `);
  return trusted(named);
}
