/**
 * Small, valid PDF files written byte by byte, for the document tests: one page per entry of
 * `pages`, each showing its lines in Helvetica (a page with no lines has no text at all, like a
 * scan). The cross-reference table is computed, so real readers (pdf.js) open them without repair.
 */

/** Escapes the characters that end or break a PDF literal string. */
function literal(text: string): string {
  return text.replace(/[\\()]/g, (c) => `\\${c}`);
}

/** A PDF whose pages show these lines (an empty page list gives one blank page). */
export function pdfWithPages(pages: readonly (readonly string[])[]): Buffer {
  const list = pages.length > 0 ? pages : [[]];
  const objects: string[] = [];
  const pageIds = list.map((_, i) => 4 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${list.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  list.forEach((lines, i) => {
    const pageId = pageIds[i]!;
    const stream = lines.length === 0 ? '' : `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((l) => `(${literal(l)}) Tj T*`).join(' ')} ET`;
    objects[pageId] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageId + 1} 0 R >>`;
    objects[pageId + 1] = `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`;
  });
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(body, 'latin1');
    body += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) body += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}
