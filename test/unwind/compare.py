#!/usr/bin/env python3
"""Compare the agent's user stacks with perf's (--call-graph dwarf) for one
process.

  compare.py PERF_SCRIPT AGENT_STACKS

PERF_SCRIPT: `perf script -F pid,ip,dso --no-inline` output: per sample a
line with the pid, then one line per frame, "ADDRESS (DSO)", leaf first,
addresses relative to the file and, past the leaf, minus one (the call).
AGENT_STACKS: lines "COUNT<TAB>FILE@ADDRESS;FILE@ADDRESS;..." (user frames,
leaf first, as stored: normalized, calls minus one).

A stack is a list of (file name, address) pairs; kernel frames are left
out of both.  Prints two shares of the agent's samples, as percentages with
one decimal, then the sample counts (agent, perf):
  exact: the share whose unwound frames (all but the leaf, the sampled pc,
         which comes from the registers and may be any instruction) perf
         saw as the unwound frames of one of its samples; perf samples far
         more often, so it sees nearly every such chain the agent can, unless
         there are very many, as with the paths through a deep recursion;
  edges: the share whose every (frame, its caller) pair past the leaf perf
         saw too, and whose outermost frame is one perf ended a stack with.
"""
import collections
import os
import sys


def perf_stacks(path):
    stacks = collections.Counter()
    frames = None
    with open(path) as f:
        for line in f:
            if line.startswith(('\t', ' ')) and frames is not None and '(' in line:
                addr, dso = line.strip().split(' ', 1)
                dso = dso.strip('()')
                if not dso.startswith('[kernel') and dso != 'unknown':
                    frames.append((os.path.basename(dso), int(addr, 16)))
            elif line.strip():
                if frames:
                    stacks[tuple(frames)] += 1
                frames = []
    if frames:
        stacks[tuple(frames)] += 1
    return stacks


def agent_stacks(path):
    stacks = collections.Counter()
    with open(path) as f:
        for line in f:
            count, frames = line.rstrip('\n').split('\t')
            key = []
            for frame in frames.split(';'):
                file, addr = frame.rsplit('@', 1)
                key.append((os.path.basename(file), int(addr)))
            stacks[tuple(key)] += int(count)
    return stacks


def main():
    perf = perf_stacks(sys.argv[1])
    agent = agent_stacks(sys.argv[2])
    chains = set()
    edges = set()
    bottoms = set()
    for stack in perf:
        chains.add(stack[1:])
        edges.update(zip(stack[1:], stack[2:]))
        bottoms.add(stack[-1])
    total = sum(agent.values())
    exact = sum(n for stack, n in agent.items() if stack[1:] in chains)
    consistent = sum(n for stack, n in agent.items()
                     if stack[-1] in bottoms and all(e in edges for e in zip(stack[1:], stack[2:])))
    pct = lambda n: 100.0 * n / total if total else 0.0
    for stack, n in agent.most_common():
        if stack[1:] not in chains:
            sys.stderr.write('%d not seen by perf: %s\n' % (n, ' '.join('%s+%x' % f for f in stack)))
    print('%.1f %.1f %d %d' % (pct(exact), pct(consistent), total, sum(perf.values())))


main()
