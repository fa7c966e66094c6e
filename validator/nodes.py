"""The syntax tree's node classes and walkers: what the validator needs of the ast module.

The node classes, the compile flags and AST itself come from the C module _ast, which the ast
module re-exports. Importing ast itself pulls in contextlib, enum, collections and functools: about
14 ms of a 19 ms import of the validator on the 2-core test VM, paid by every one-shot `codeact run`
and `codeact validate` before their first verdict. walk and iter_child_nodes below behave as ast's
(breadth-first, the same order); unparse, needed only to word a few messages, imports ast then.
"""

from _ast import *  # noqa: F401,F403 (the node classes, as ast exports them)
from _ast import AST


def iter_child_nodes(node):
    """The direct children of node that are nodes, in field order (ast.iter_child_nodes)."""
    for name in node._fields:
        try:
            field = getattr(node, name)
        except AttributeError:
            continue
        if isinstance(field, AST):
            yield field
        elif isinstance(field, list):
            for item in field:
                if isinstance(item, AST):
                    yield item


def walk(node):
    """node and every node beneath it, breadth-first (ast.walk)."""
    todo = [node]
    i = 0
    while i < len(todo):
        node = todo[i]
        i += 1
        todo.extend(iter_child_nodes(node))
        yield node


def unparse(node):
    import ast
    return ast.unparse(node)
