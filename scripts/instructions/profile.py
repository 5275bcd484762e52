#!/usr/bin/env python3
"""profile.py: instructions per function, Swift module and library from profile.c's output.

    profile.py PROFILE                  totals of one run
    profile.py SMALL LARGE N            (LARGE − SMALL) ÷ N: per relayed message, start-up left out

PROFILE files come from `profile.sh` (docs/performance.md, "Where the instructions go"). Addresses are
mapped to the files of the process's memory map and to their symbols with `nm` (the symbol table, else
the dynamic one); Swift names are demangled with `swift demangle` and grouped by the module their mangled
name starts with, C functions by their library."""
import bisect, collections, os, re, subprocess, sys

def read(path):
    maps, blocks, section = [], collections.Counter(), None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line in ('maps', 'blocks'):
                section = line
                continue
            if section == 'maps':
                parts = line.split(None, 5)
                start, end = (int(x, 16) for x in parts[0].split('-'))
                maps.append((start, end, int(parts[2], 16), parts[5] if len(parts) > 5 else ''))
            elif section == 'blocks':
                address, insns, runs = line.split()
                blocks[int(address, 16)] += int(insns) * int(runs)
    return maps, blocks

symbol_cache = {}
def symbols(path):
    if path not in symbol_cache:
        table = []
        for dynamic in ([], ['-D']):
            try:
                out = subprocess.run(['nm', '--defined-only', '-n'] + dynamic + [path], capture_output=True, text=True).stdout
            except OSError:
                out = ''
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in 'TtWwi':
                    table.append((int(parts[0], 16), parts[2]))
            if table:
                break
        table.sort()
        lowest = None
        try:
            for line in subprocess.run(['readelf', '-lW', path], capture_output=True, text=True).stdout.splitlines():
                fields = line.split()
                if fields and fields[0] == 'LOAD':
                    vaddr = int(fields[2], 16)
                    lowest = vaddr if lowest is None else min(lowest, vaddr)
        except OSError:
            pass
        symbol_cache[path] = (table, [a for a, _ in table], lowest or 0)
    return symbol_cache[path]

def attribute(maps, blocks):
    """{(library, symbol): instructions}"""
    starts = [m[0] for m in maps]
    bases = {}
    for start, _, offset, path in maps:
        if offset == 0 and path and path not in bases:
            bases[path] = start
    result = collections.Counter()
    for address, count in blocks.items():
        i = bisect.bisect_right(starts, address) - 1
        if i < 0 or address >= maps[i][1] or not maps[i][3].startswith('/'):
            result[('[unmapped]', '?')] += count
            continue
        path = maps[i][3]
        table, addresses, lowest = symbols(path)
        relative = address - bases.get(path, maps[i][0]) + lowest
        j = bisect.bisect_right(addresses, relative) - 1
        result[(os.path.basename(path), table[j][1] if j >= 0 else '?')] += count
    return result

def module(library, name):
    m = re.match(r'_?\$s(?:S[a-zA-Z]|s)?(\d+)([A-Za-z_][A-Za-z0-9_]*)', name)
    if name.startswith(('$sS', '_$sS', '$ss', '_$ss')) and not re.match(r'_?\$s\d', name):
        return 'Swift'
    if m:
        return m.group(2)[:int(m.group(1))]
    return library

def demangle(names):
    """Swift names with `swift demangle`, C++ ones with `c++filt`; a name neither tool takes stays."""
    names = [name.split('@')[0] for name in names]
    for tool in (['swift', 'demangle', '--simplified'], ['c++filt']):
        try:
            out = subprocess.run(tool, input='\n'.join(names), capture_output=True, text=True).stdout.splitlines()
            if len(out) == len(names):
                names = out
        except OSError:
            pass
    return names

def main(argv):
    if len(argv) == 2:
        counts, divisor, what = attribute(*read(argv[1])), 1, 'instructions'
    elif len(argv) == 4:
        small, large = attribute(*read(argv[1])), attribute(*read(argv[2]))
        counts, divisor, what = large, int(argv[3]), 'instructions per message'
        counts.subtract(small)
    else:
        sys.exit(__doc__)
    total = sum(counts.values())
    print(f'total: {total / divisor:,.0f} {what}')
    by_library, by_module = collections.Counter(), collections.Counter()
    for (library, name), count in counts.items():
        by_library[library] += count
        by_module[module(library, name)] += count
    for title, table in (('library', by_library), ('module', by_module)):
        print(f'\nby {title}:')
        for key, count in table.most_common(25):
            print(f'  {count / divisor:>14,.0f}  {100 * count / total:5.1f} %  {key}')
    top = counts.most_common(60)
    print('\nfunctions (self):')
    for ((library, _), count), name in zip(top, demangle([name for (_, name), _ in top])):
        print(f'  {count / divisor:>14,.0f}  {100 * count / total:5.1f} %  {library}  {name[:160]}')

if __name__ == '__main__':
    main(sys.argv)
