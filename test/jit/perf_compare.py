#!/usr/bin/env python3
"""Compare the agent's JIT frames with perf's for one process.

  perf_compare.py PERF_SCRIPT AGENT_STACKS

PERF_SCRIPT: `perf script -F pid,ip,sym,dso --no-inline` of a `perf record
-g` of the process: per sample a line with the pid, then one line per
frame, "ADDRESS SYMBOL (DSO)", leaf first; perf names JIT code from the
process's perf map (DSO /tmp/perf-PID.map).
AGENT_STACKS: lines "COUNT<TAB>FRAME<US>FRAME..." (user frames, leaf
first), FRAME "J:" and the system name of a JIT frame (the name as the map
wrote it, without its source), or "N" for any other frame.

Of each sample whose leaf is JIT code, the JIT frames from the leaf up to
the first other frame are its JIT chain (names as the map wrote them, a
source " FILE:LINE:COL" left out).  Prints two shares of the agent's
samples with a JIT leaf, as percentages with one decimal, then the sample
counts (agent, perf):
  exact: the share whose JIT chain perf saw as the chain of one of its
         samples (perf samples far more often);
  edges: the share whose every (frame, its caller) pair perf saw too.
"""
import collections
import re
import sys

SOURCE = re.compile(r' \S+:\d+(:\d+)?$')


def perf_chains(path):
    chains = collections.Counter()
    frames = None
    jit = True

    def done():
        if frames:
            chains[tuple(frames)] += 1

    with open(path, errors='replace') as f:
        for line in f:
            # a frame's line starts with a tab; a sample's with its pid,
            # padded to five columns ("  4403")
            if line.startswith('\t') and frames is not None:
                m = re.match(r'\s*[0-9a-f]+ (.*) \((.*)\)$', line.rstrip('\n'))
                if not m:
                    continue
                is_jit = re.search(r'/perf-\d+\.map$', m.group(2)) is not None
                if jit and is_jit:
                    frames.append(SOURCE.sub('', m.group(1)))
                else:
                    jit = False
            elif line.strip():
                done()
                frames = []
                jit = True
    done()
    return chains


def agent_chains(path):
    chains = collections.Counter()
    with open(path, errors='replace') as f:
        for line in f:
            count, frames = line.rstrip('\n').split('\t', 1)
            chain = []
            for frame in frames.split('\x1f'):
                if not frame.startswith('J:'):
                    break
                chain.append(frame[2:])
            if chain:
                chains[tuple(chain)] += int(count)
    return chains


def main():
    perf = perf_chains(sys.argv[1])
    agent = agent_chains(sys.argv[2])
    seen = set(perf)
    pairs = {(c[i], c[i + 1]) for c in perf for i in range(len(c) - 1)}
    total = sum(agent.values())
    exact = sum(n for c, n in agent.items() if c in seen)
    edges = sum(n for c, n in agent.items()
                if all((c[i], c[i + 1]) in pairs for i in range(len(c) - 1)))
    for c, n in agent.most_common():
        if c not in seen:
            print('not seen by perf: %d x %s' % (n, ';'.join(c)), file=sys.stderr)
    pct = (lambda x: 100.0 * x / total) if total else (lambda x: 0.0)
    print('%.1f %.1f %d %d' % (pct(exact), pct(edges), total, sum(perf.values())))


main()
