// The metric graph: one line per series over the range (parca_query_range),
// drawn as SVG.  A click on a point opens that point's profile; a drag
// selects a range to merge.
import React from 'react';
import type { RangeSeries } from './api';

const palette = ['#7eb26d', '#eab839', '#6ed0e0', '#ef843c', '#e24d42', '#1f78c1', '#ba43a9', '#705da0',
  '#508642', '#cca300', '#447ebc', '#c15c17', '#890f02', '#0a437c', '#6d1f62', '#584477'];

export function seriesColor(i: number): string {
  return palette[i % palette.length];
}

type Props = {
  series: RangeSeries[];
  start: number;
  stop: number;
  step: number; // ms
  format: (v: number) => string;
  selection?: [number, number]; // the dragged range
  onPoint: (series: RangeSeries, time: number) => void;
  onRange: (from: number, to: number) => void;
};

const H = 220;
const PAD = { left: 70, right: 16, top: 12, bottom: 28 };

function timeLabel(t: number, span: number): string {
  const d = new Date(t);
  const iso = d.toISOString();
  if (span > 2 * 864e5) return iso.slice(0, 10) + ' ' + iso.slice(11, 16);
  return iso.slice(11, span > 600e3 ? 16 : 19);
}

export function MetricGraph(p: Props) {
  const box = React.useRef<HTMLDivElement>(null);
  const [width, setWidth] = React.useState(1000);
  const [drag, setDrag] = React.useState<[number, number] | null>(null);

  React.useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(300, el.clientWidth));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const W = width;
  const span = Math.max(1, p.stop - p.start);
  let max = 0;
  for (const s of p.series) for (const pt of s.points) max = Math.max(max, pt[1]);
  if (max <= 0) max = 1;
  const x = (t: number) => PAD.left + ((t - p.start) / span) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - v / max) * (H - PAD.top - PAD.bottom);
  const tAt = (px: number) => p.start + ((px - PAD.left) / (W - PAD.left - PAD.right)) * span;
  const ticks = 6;

  const svgX = (e: React.MouseEvent) => e.clientX - (e.currentTarget as SVGElement).getBoundingClientRect().left;

  const onDown = (e: React.MouseEvent) => {
    if ((e.target as Element).tagName === 'circle') return;
    const px = svgX(e);
    setDrag([px, px]);
  };
  const onMove = (e: React.MouseEvent) => {
    if (drag) setDrag([drag[0], svgX(e)]);
  };
  const onUp = () => {
    if (drag && Math.abs(drag[1] - drag[0]) > 4) {
      const a = Math.round(tAt(Math.min(drag[0], drag[1])));
      const b = Math.round(tAt(Math.max(drag[0], drag[1])));
      p.onRange(Math.max(a, p.start), Math.min(b, p.stop));
    }
    setDrag(null);
  };

  return (
    <div className="metric-graph" ref={box}>
      <svg width={W} height={H} onMouseDown={onDown} onMouseMove={onMove} onMouseUp={onUp}
        onMouseLeave={() => setDrag(null)} role="img" aria-label="metric graph">
        {Array.from({ length: ticks + 1 }, (_, i) => {
          const t = p.start + (span * i) / ticks;
          return (
            <g key={'x' + i} className="tick">
              <line x1={x(t)} x2={x(t)} y1={PAD.top} y2={H - PAD.bottom} />
              <text x={x(t)} y={H - 8} textAnchor={i === 0 ? 'start' : i === ticks ? 'end' : 'middle'}>
                {timeLabel(t, span)}
              </text>
            </g>
          );
        })}
        {[0, 0.5, 1].map((f) => (
          <g key={'y' + f} className="tick">
            <line x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} />
            <text x={PAD.left - 6} y={y(max * f) + 4} textAnchor="end">{p.format(max * f)}</text>
          </g>
        ))}
        {p.selection && (
          <rect className="selection" x={x(p.selection[0])} y={PAD.top}
            width={Math.max(2, x(p.selection[1]) - x(p.selection[0]))} height={H - PAD.top - PAD.bottom} />
        )}
        {drag && (
          <rect className="dragging" x={Math.min(drag[0], drag[1])} y={PAD.top}
            width={Math.abs(drag[1] - drag[0])} height={H - PAD.top - PAD.bottom} />
        )}
        {p.series.map((s, i) => (
          <g key={s.series} className="series" data-series={s.series}>
            <path d={s.points.map((pt, k) => `${k ? 'L' : 'M'}${x(pt[0]).toFixed(1)},${y(pt[1]).toFixed(1)}`).join('')}
              stroke={seriesColor(i)} fill="none" strokeWidth={1.5} />
            {s.points.map((pt) => (
              <circle key={pt[0]} cx={x(pt[0])} cy={y(pt[1])} r={4} fill={seriesColor(i)}
                className="point" data-time={pt[0]} onClick={() => p.onPoint(s, pt[0])}>
                <title>{`${s.series}\n${new Date(pt[0]).toISOString()} (${p.step / 1000} s)\n${p.format(pt[1])}, ${pt[2]} profile${pt[2] === 1 ? '' : 's'}: click to open`}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <ul className="legend">
        {p.series.map((s, i) => (
          <li key={s.series}><span className="swatch" style={{ background: seriesColor(i) }} />{s.series}</li>
        ))}
      </ul>
    </div>
  );
}
