"""The import graph of the onnxproof package has no cycle.

Read from the source with ast, never imported: every `import` and `from ... import` of every module
counts, those inside functions too, since an import moved into a function to dodge a cycle is still
a cycle (STYLE.md). The one edge left out is a module's to its own ancestor packages (importing
onnxproof.torch.export runs onnxproof/torch/__init__.py first anyway, and a package's __init__ may
import its submodules lazily)."""
import ast
import pathlib
import unittest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "onnxproof"


def package_modules(root=PACKAGE):
    """{dotted module name: its file} for every .py file under `root` (a package's __init__.py is
    the package's own name)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(name, path):
    """Every dotted name module `name` (at `path`) imports anywhere in its body: `import a.b` gives
    a.b; `from a import b, c` gives a, a.b and a.c (b may be a submodule or a name in a); relative
    imports are resolved against the module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # one dot is the package itself, each further dot one package up
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(modules):
    """{module: the package's modules it imports}, without a module's edges to itself and to its
    own ancestor packages."""
    graph = {}
    for name, path in modules.items():
        graph[name] = {target for target in imported_names(name, path)
                       if target in modules and target != name and not name.startswith(target + ".")}
    return graph


def strongly_connected(graph):
    """The strongly connected components of `graph` with more than one module (Tarjan's
    algorithm), each sorted; every one of them holds a cycle."""
    index, lowest, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = lowest[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                lowest[node] = min(lowest[node], lowest[target])
            elif target in on_stack:
                lowest[node] = min(lowest[node], index[target])
        if lowest[node] == index[node]:  # `node` is the root of a component: pop it whole
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def one_cycle(graph, component):
    """A shortest cycle through the component's first module, as [a, b, ..., a]: the path that
    names the imports to look at."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first, so the cycle reported is a shortest one
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return paths[node] + [start]
            if target not in paths:
                paths[target] = paths[node] + [target]
                queue.append(target)
    return component + [component[0]]  # not reached: a component's members reach each other


class ImportGraphTest(unittest.TestCase):
    def test_the_package_has_no_import_cycle(self):
        graph = import_graph(package_modules())
        cycles = [" -> ".join(one_cycle(graph, component)) for component in strongly_connected(graph)]
        self.assertEqual(cycles, [], "import cycles (each a strongly connected group of modules; one cycle "
                                     "shown per group):\n" + "\n".join(cycles))

    def test_the_graph_sees_every_kind_of_import(self):
        # Guards the test above against passing on an empty graph: a top-level relative import,
        # a function-level one and an absolute one, each known to be in the source.
        graph = import_graph(package_modules())
        self.assertIn("onnxproof.torch.export_reference", graph["onnxproof.torch.export"])
        self.assertIn("onnxproof.torch.localize", graph["onnxproof.torch"])  # inside run_localize()
        self.assertIn("onnxproof.core.frameworks", graph["onnxproof.api"])
        self.assertNotIn("onnxproof.torch", graph["onnxproof.torch.spec"])  # its own package: left out

    def test_a_cycle_is_found_and_named(self):
        graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
        components = strongly_connected(graph)
        self.assertEqual(components, [["a", "b", "c"], ["e", "e2"]])
        self.assertEqual(one_cycle(graph, components[0]), ["a", "b", "c", "a"])


if __name__ == "__main__":
    unittest.main()
