"""Import-graph checks shared by the layout tests of the service and of the emulator."""


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one cycle of ``graph`` (module -> the modules it imports) as the path round it, or ``None``."""
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt):] + [node, nxt] if nxt in trail else [node, nxt]
            if nxt not in state and (found := visit(nxt, trail + [node])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None
