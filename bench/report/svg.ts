import { formatNumber } from './format';
import type { ContenderKind, ResultEntry } from './results';

const WIDTH = 900;
const LABEL_W = 300;
const BAR_W = 420;
/** Longest label that fits left of the bars at 11 px. */
const LABEL_CHARS = 50;
const ROW_H = 18;
const TITLE_H = 24;
const GAP = 12;
const COLORS: Record<ContenderKind, string> = { ours: '#2563eb', peer: '#9ca3af', floor: '#4b5563', baseline: '#10b981' };

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * A horizontal bar chart of one group: one block per entry (metric), one bar per
 * contender, bars scaled to the largest value of their block (linear, so a peer
 * ten times slower looks it). Failed contenders get a label instead of a bar.
 */
export function groupChart(title: string, entries: readonly ResultEntry[]): string {
  const parts: string[] = [];
  let y = 34;
  for (const entry of entries) {
    const rows = [entry.ours, ...entry.peers];
    const max = Math.max(...rows.map((r) => r.value ?? 0), 0);
    const direction = entry.betterIs === 'higher' ? 'higher is better' : 'lower is better';
    parts.push(`<text x="8" y="${y + 15}" class="t">${escape(entry.name)} <tspan class="d">(${entry.unit}, ${direction})</tspan></text>`);
    y += TITLE_H;
    for (const row of rows) {
      const label = row.label.length > LABEL_CHARS ? `${row.label.slice(0, LABEL_CHARS - 1)}…` : row.label;
      parts.push(
        `<text x="${LABEL_W - 6}" y="${y + 13}" class="l${row.kind === 'ours' ? ' o' : ''}" text-anchor="end">${escape(label)}</text>`,
      );
      if (row.value === null) {
        parts.push(`<text x="${LABEL_W + 4}" y="${y + 13}" class="f">failed — see the table notes</text>`);
      } else {
        const w = max > 0 ? Math.max(1, (Math.max(0, row.value) / max) * BAR_W) : 1;
        parts.push(`<rect x="${LABEL_W}" y="${y + 2}" width="${w.toFixed(1)}" height="${ROW_H - 5}" rx="2" fill="${COLORS[row.kind]}"/>`);
        parts.push(`<text x="${LABEL_W + w + 6}" y="${y + 13}" class="v">${escape(formatNumber(row.value))}</text>`);
      }
      y += ROW_H;
    }
    y += GAP;
  }
  const legend = (Object.entries(COLORS) as Array<[ContenderKind, string]>)
    .map(
      ([kind, color], i) =>
        `<rect x="${WIDTH - 330 + i * 82}" y="10" width="10" height="10" fill="${color}"/><text x="${WIDTH - 316 + i * 82}" y="19" class="d">${kind === 'ours' ? 'this library' : kind}</text>`,
    )
    .join('');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y + 8}" viewBox="0 0 ${WIDTH} ${y + 8}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif">`,
    '<style>.t{font-size:12px;font-weight:600;fill:#111827}.d{font-size:11px;font-weight:400;fill:#6b7280}.l{font-size:11px;fill:#374151}.o{font-weight:600;fill:#1d4ed8}.v{font-size:11px;fill:#111827}.f{font-size:11px;fill:#b91c1c;font-style:italic}</style>',
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="8" y="20" font-size="15" font-weight="700" fill="#111827">${escape(title)}</text>`,
    legend,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
