// The label selector box: {name="value", ...}, with completion of label
// names (parca_labels) and values (parca_label_values) of the chosen
// profile type's series.
import React from 'react';
import { get, type List } from './api';
import { quoteValue } from './state';

type Props = {
  type: string;
  value: string;
  onChange: (v: string) => void;
  onSubmit: (v: string) => void;
  onError: (e: Error) => void;
  id: string;
};

type Context = { kind: 'name' | 'value'; label: string; prefix: string; from: number };

// what the text before the cursor is in the middle of
function context(before: string): Context | null {
  const v = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/.exec(before);
  if (v) {
    const prefix = v[3].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    return { kind: 'value', label: v[1], prefix, from: before.length - v[3].length - 1 };
  }
  const n = /[{,]\s*([a-zA-Z_][a-zA-Z0-9_]*)?$/.exec(before);
  if (n) {
    const prefix = n[1] || '';
    return { kind: 'name', label: '', prefix, from: before.length - prefix.length };
  }
  return null;
}

export function SelectorInput(p: Props) {
  const input = React.useRef<HTMLInputElement>(null);
  const [ctx, setCtx] = React.useState<Context | null>(null);
  const [options, setOptions] = React.useState<string[]>([]);
  const [active, setActive] = React.useState(0);
  const cache = React.useRef(new Map<string, Promise<string[]>>());

  const load = React.useCallback((c: Context): Promise<string[]> => {
    const key = `${p.type}|${c.kind}|${c.label}`;
    let hit = cache.current.get(key);
    if (!hit) {
      const selector = p.type + '{}';
      hit = (c.kind === 'name'
        ? get<List>('labels', { selector })
        : get<List>('label-values', { label: c.label, selector })).then((l) => l.values);
      hit.catch(() => cache.current.delete(key));
      cache.current.set(key, hit);
    }
    return hit;
  }, [p.type]);

  const refresh = (text: string, cursor: number) => {
    const c = p.type ? context(text.slice(0, cursor)) : null;
    setCtx(c);
    if (!c) {
      setOptions([]);
      return;
    }
    load(c).then((all) => {
      const low = c.prefix.toLowerCase();
      const starts = all.filter((v) => v.toLowerCase().startsWith(low));
      const contains = all.filter((v) => !v.toLowerCase().startsWith(low) && v.toLowerCase().includes(low));
      setOptions(starts.concat(contains).slice(0, 50));
      setActive(0);
    }, (e) => { setOptions([]); p.onError(e); });
  };

  const accept = (choice: string) => {
    if (!ctx || !input.current) return;
    const text = p.value;
    const cursor = input.current.selectionStart ?? text.length;
    let after = text.slice(cursor);
    let insert: string;
    if (ctx.kind === 'value') {
      insert = quoteValue(choice);
      // the rest of the value being typed, and its closing quote, are replaced
      const rest = /^(?:[^"\\]|\\.)*"?/.exec(after);
      if (rest) after = after.slice(rest[0].length);
      if (!after.includes('}')) after += '}';
    } else {
      insert = choice + '="';
      const rest = /^[a-zA-Z0-9_]*/.exec(after);
      if (rest) after = after.slice(rest[0].length);
    }
    const next = text.slice(0, ctx.from) + insert + after;
    const pos = ctx.from + insert.length;
    p.onChange(next);
    requestAnimationFrame(() => {
      input.current?.setSelectionRange(pos, pos);
      input.current?.focus();
      refresh(next, pos);
    });
  };

  const onKey = (e: React.KeyboardEvent<HTMLInputElement>) => {
    const open = options.length > 0 && ctx;
    if (open && e.key === 'ArrowDown') {
      setActive((active + 1) % options.length);
      e.preventDefault();
    } else if (open && e.key === 'ArrowUp') {
      setActive((active + options.length - 1) % options.length);
      e.preventDefault();
    } else if (open && (e.key === 'Tab' || (e.key === 'Enter' && !e.ctrlKey))) {
      accept(options[active]);
      e.preventDefault();
    } else if (e.key === 'Escape') {
      setOptions([]);
    } else if (e.key === 'Enter') {
      setOptions([]);
      p.onSubmit(p.value);
    }
  };

  return (
    <div className="selector">
      <input id={p.id} ref={input} value={p.value} spellCheck={false} autoComplete="off"
        placeholder={'{job="api", instance=~"10\\\\..*"}'}
        aria-label="label selector"
        onChange={(e) => { p.onChange(e.target.value); refresh(e.target.value, e.target.selectionStart ?? 0); }}
        onClick={(e) => refresh(p.value, (e.target as HTMLInputElement).selectionStart ?? 0)}
        onFocus={(e) => refresh(p.value, e.target.selectionStart ?? 0)}
        onBlur={() => setTimeout(() => setOptions([]), 150)}
        onKeyDown={onKey} />
      {ctx && options.length > 0 && (
        <ul className="suggestions" role="listbox" aria-label={ctx.kind === 'name' ? 'label names' : 'label values'}>
          {options.map((o, i) => (
            <li key={o} role="option" aria-selected={i === active} className={i === active ? 'active' : ''}
              onMouseDown={(e) => { e.preventDefault(); accept(o); }}>
              {o === '' ? '(empty)' : o}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
