/** A number as the tables and charts print it: grouped thousands, or 3 significant digits. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs === 0) return '0';
  if (abs >= 100) return value.toFixed(0);
  return Number(value.toPrecision(3)).toString();
}

export function formatValue(value: number | null, unit: string): string {
  if (value === null) return 'failed';
  return `${formatNumber(value)} ${unit}`;
}

export function formatRatio(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '—';
  return `${ratio >= 100 ? Math.round(ratio).toLocaleString('en-US') : Number(ratio.toPrecision(3))}×`;
}
