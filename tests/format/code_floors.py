#!/usr/bin/env python3
"""Floors for src/: file line counts and function-body lengths by brace matching.

Usage: python3 tests/format/code_floors.py [src] [80]

A function body is a '{' met at namespace/class scope whose head (text since the last
';', '{' or '}' at that scope) has a parameter list: it ends in ')' or in ')' followed by
qualifiers (const, noexcept, override, final, mutable, '-> Type'), or is a constructor with
an initializer list. Lambdas and local classes count as part of their enclosing function.
Length = lines from the line of the '{' to the line of its '}' inclusive.
"""
import re, sys, pathlib

def strip(text):
    out = []; i = 0; n = len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i-1].isalnum() or text[i-1] == '_')) or \
             (c in 'uUL8' and re.match(r'(u8|u|U|L)R"', text[i:i+4]) and (i == 0 or not text[i-1].isalnum())):
            m = re.match(r'(?:u8|u|U|L)?R"([^(]*)\(', text[i:])
            delim = ')' + m.group(1) + '"'
            j = text.find(delim, i + m.end()); j = n if j < 0 else j + len(delim)
            out.append('""' + re.sub(r'[^\n]', ' ', text[i+2:j])); i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i-1].isalnum() and text[i+1:i+2].isalnum())):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j += 1
            out.append(c + re.sub(r'[^\n]', ' ', text[i+1:j-1]) + c); i = j
        else:
            out.append(c); i += 1
    return ''.join(out)

QUAL = r'(\s*(const|noexcept(\s*\([^)]*\))?|override|final|mutable|&&|&|->\s*[\w:<>,\s\*&]+|requires[^{]*))*\s*$'
CTRL = re.compile(r'^\s*(if|for|while|switch|catch|do|else|return|try)\b')
SCOPE = re.compile(r'\b(namespace|class|struct|union|enum|extern\s*"C")\b')

def functions(path):
    text = strip(pathlib.Path(path).read_text(errors='replace'))
    results = []
    stack = []  # 'scope' or ('func', start_line, name) or 'block'
    head_start = 0; i = 0; line = 1
    def in_func():
        return any(isinstance(s, tuple) for s in stack)
    while i < len(text):
        c = text[i]
        if c == '\n': line += 1
        if c == ';' and not in_func():
            head_start = i + 1
        elif c == '{':
            if in_func():
                stack.append('block')
            else:
                head = text[head_start:i]
                h = ' '.join(head.split())
                # drop template<...> prefix and attributes for the scope test
                if re.search(r'\)' + QUAL, h) and not CTRL.match(h) and '(' in h and not re.search(r'=\s*$', h) \
                        and not SCOPE.match(re.sub(r'^template\s*<.*?>\s*', '', h)):
                    name = re.findall(r'([~\w:]+(?:operator\S*)?)\s*\(', h)
                    stack.append(('func', line, name[0] if name else h[:40]))
                elif re.search(r'\)\s*:\s*[^:].*[\w>]\s*$', h) and not SCOPE.match(h):
                    # member brace-init inside a constructor initializer list: skip it
                    depth = 1; i += 1
                    while depth:
                        if text[i] == '{': depth += 1
                        elif text[i] == '}': depth -= 1
                        elif text[i] == '\n': line += 1
                        i += 1
                    continue
                elif SCOPE.search(h) or h == '':
                    stack.append('scope'); head_start = i + 1
                else:
                    stack.append('block')  # brace initializer at scope level
        elif c == '}':
            top = stack.pop() if stack else 'scope'
            if isinstance(top, tuple):
                results.append((line - top[1] + 1, top[2], top[1]))
            if not in_func() and top != 'block':
                head_start = i + 1
        i += 1
    return results

def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else 'src')
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    files = sorted(p for p in root.rglob('*') if p.suffix in ('.cpp', '.hpp', '.cc', '.h', '.in'))
    total_funcs = 0; long = []; big = []
    for p in files:
        n = p.read_text(errors='replace').count('\n')
        if n > 900: big.append((n, str(p)))
        for length, name, start in functions(p):
            total_funcs += 1
            if length > limit: long.append((length, f'{p}:{start}', name))
    print(f'files: {len(files)}; over 900 lines: {len(big)}')
    for n, p in sorted(big, reverse=True): print(f'  {n:5d}  {p}')
    print(f'functions: {total_funcs}; over {limit} lines: {len(long)}')
    for n, where, name in sorted(long, reverse=True): print(f'  {n:5d}  {where}  {name}')

main()
