"""A feed-forward network that is a graph, not a layer stack: what a NEAT genome decodes to.

Nodes are numbered ``0 .. input_size-1`` (inputs), ``input_size .. input_size+output_size-1``
(outputs), then hidden nodes. Every non-input node ``n`` computes
``activation_n(bias_n + sum_{(s, n, w)} w * value_s)``. The connections must form a DAG; the nodes are
evaluated level by level (a node's level is one more than its deepest source's), so one matrix
product per level evaluates a whole batch of observations.

Plain data only: ``architecture()`` and ``state_dict()`` are the model file's ``architecture`` and
``params`` (see docs/model-format.md, "Graph networks"); ``check_graph`` validates both before anything
is built and is what ``model_io`` calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .mlp import ACTIVATIONS, _activate

__all__ = ["GraphNetwork", "RecurrentGraphNetwork", "GraphError",
           "check_graph", "graph_levels", "is_graph_architecture", "is_recurrent_graph", "MAX_GRAPH_NODES",
           "MAX_GRAPH_CONNECTIONS", "GRAPH_ARCHITECTURE_KEYS", "GRAPH_PARAM_KEYS"]

#: Most nodes (inputs, outputs and hidden) a graph network may have.
MAX_GRAPH_NODES = 100_000
#: Most connections a graph network may have.
MAX_GRAPH_CONNECTIONS = 1_000_000


class GraphError(ValueError):
    """A graph is not a valid feed-forward network; the message names the node or connection at fault."""


def graph_levels(n_nodes: int, input_size: int, connections: Sequence[tuple[int, int]]) -> list[int]:
    """Each node's level (inputs 0; others 1 + their deepest source's level); ``GraphError`` on a cycle.

    Kahn's algorithm, so a cycle is found in linear time whatever the graph's shape.
    """
    succ: list[list[int]] = [[] for _ in range(n_nodes)]
    indegree = [0] * n_nodes
    for src, dst in connections:
        succ[src].append(dst)
        indegree[dst] += 1
    level = [0] * input_size + [1] * (n_nodes - input_size)  # a non-input node without sources: act(bias)
    ready = [n for n in range(n_nodes) if indegree[n] == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for dst in succ[node]:
            level[dst] = max(level[dst], level[node] + 1)
            indegree[dst] -= 1
            if indegree[dst] == 0:
                ready.append(dst)
    if seen != n_nodes:
        stuck = next(n for n in range(n_nodes) if indegree[n] > 0)
        raise GraphError(f"connections form a cycle (through node {stuck}): a graph network must be feed-forward")
    return level


def _is_int(v: Any) -> bool:
    return type(v) is int


#: The keys of a graph architecture: a layer stack's four (``hidden`` empty) plus ``graph``.
GRAPH_ARCHITECTURE_KEYS = ("input_size", "hidden", "output_size", "output_activation", "graph")
#: The keys of a graph network's ``params``.
GRAPH_PARAM_KEYS = ("graph.weight", "graph.bias")


def _check_header(arch: Any) -> None:
    if not isinstance(arch, dict):
        raise GraphError("architecture must be an object")
    for key in GRAPH_ARCHITECTURE_KEYS:
        if key not in arch:
            raise GraphError(f"architecture: missing required key {key!r} (a graph network needs "
                             f"{', '.join(GRAPH_ARCHITECTURE_KEYS)})")
    unknown = sorted(set(arch) - set(GRAPH_ARCHITECTURE_KEYS))
    if unknown:
        raise GraphError(f"architecture: unknown key {unknown[0]!r} for a graph network (allowed: "
                         f"{', '.join(GRAPH_ARCHITECTURE_KEYS)})")
    for key in ("input_size", "output_size"):
        v = arch[key]
        if not _is_int(v) or not 1 <= v <= MAX_GRAPH_NODES:
            raise GraphError(f"architecture.{key} must be an integer between 1 and {MAX_GRAPH_NODES}, got {v!r:.40}")
    if arch["hidden"] != []:
        raise GraphError("architecture.hidden must be [] in a graph network: its hidden nodes are in "
                         "architecture.graph.nodes")
    if not isinstance(arch["output_activation"], str) or arch["output_activation"] not in ACTIVATIONS:
        raise GraphError(f"architecture.output_activation: unknown activation {arch['output_activation']!r:.40}; "
                         f"known: {', '.join(ACTIVATIONS)}")
    graph = arch["graph"]
    if not isinstance(graph, dict) or not {"nodes", "connections"} <= set(graph) <= {"nodes", "connections",
                                                                                     "recurrent"}:
        raise GraphError("architecture.graph must be an object with exactly 'nodes' and 'connections' "
                         "(and 'recurrent': true for a network with cycles)")
    if "recurrent" in graph and graph["recurrent"] is not True:
        raise GraphError(f"architecture.graph.recurrent must be true when present (a feed-forward graph leaves "
                         f"it out), got {graph['recurrent']!r:.40}")


def _check_nodes(arch: dict[str, Any]) -> int:
    nodes = arch["graph"]["nodes"]
    if not isinstance(nodes, list):
        raise GraphError("architecture.graph.nodes must be an array of activation names (one per hidden node)")
    n_nodes = arch["input_size"] + arch["output_size"] + len(nodes)
    if n_nodes > MAX_GRAPH_NODES:
        raise GraphError(f"architecture.graph.nodes: {n_nodes} nodes in all, more than the limit of {MAX_GRAPH_NODES}")
    for i, act in enumerate(nodes):
        if not isinstance(act, str) or act not in ACTIVATIONS:
            raise GraphError(f"architecture.graph.nodes[{i}]: unknown activation {act!r:.40}; "
                             f"known: {', '.join(ACTIVATIONS)}")
    return n_nodes


def _check_connections(conns: Any, n_in: int, n_nodes: int, recurrent: bool = False) -> None:
    field = "architecture.graph.connections"
    if not isinstance(conns, list):
        raise GraphError(f"{field} must be an array of [source, target] pairs")
    if len(conns) > MAX_GRAPH_CONNECTIONS:
        raise GraphError(f"{field}: {len(conns)}, more than the limit of {MAX_GRAPH_CONNECTIONS}")
    seen: set[tuple[int, int]] = set()
    for j, c in enumerate(conns):
        if not (isinstance(c, list) and len(c) == 2 and _is_int(c[0]) and _is_int(c[1])):
            raise GraphError(f"{field}[{j}] must be a pair of node ids [source, target]")
        src, dst = c
        if not 0 <= src < n_nodes or not 0 <= dst < n_nodes:
            raise GraphError(f"{field}[{j}]: node id out of range (the graph has nodes 0 to {n_nodes - 1}), "
                             f"got [{src}, {dst}]")
        if dst < n_in:
            raise GraphError(f"{field}[{j}]: [{src}, {dst}] ends at input node {dst}; inputs have no incoming "
                             f"connections")
        if (src, dst) in seen:
            raise GraphError(f"{field}[{j}]: [{src}, {dst}] appears twice")
        seen.add((src, dst))
    if not recurrent:  # (a recurrent graph may have cycles and self loops: one activation per step)
        graph_levels(n_nodes, n_in, [(c[0], c[1]) for c in conns])


def is_graph_architecture(arch: Any) -> bool:
    """A graph network's architecture has a ``graph`` key; a layer stack's has not."""
    return isinstance(arch, dict) and "graph" in arch


def is_recurrent_graph(arch: Any) -> bool:
    """A recurrent graph's architecture has ``graph.recurrent`` true (``RecurrentGraphNetwork``)."""
    return is_graph_architecture(arch) and isinstance(arch["graph"], dict) and arch["graph"].get("recurrent") is True


def check_graph(arch: Any, params: Any = None) -> None:
    """Validate a graph architecture (and its params when given): types, ids in range, sizes bounded, no cycle.

    Raises ``GraphError`` naming the field. Works on plain JSON data, before any array is built.
    """
    _check_header(arch)
    n_nodes = _check_nodes(arch)
    _check_connections(arch["graph"]["connections"], arch["input_size"], n_nodes, is_recurrent_graph(arch))
    if params is None:
        return
    if not isinstance(params, dict) or set(params) != set(GRAPH_PARAM_KEYS):
        raise GraphError("params of a graph network must be an object with exactly 'graph.weight' and 'graph.bias'")
    for key, want, what in (("graph.bias", n_nodes - arch["input_size"], "one per output and hidden node"),
                            ("graph.weight", len(arch["graph"]["connections"]), "one per connection")):
        values = params[key]
        if not isinstance(values, list) or len(values) != want:
            raise GraphError(f"params.{key}: expected {want} numbers ({what}), got "
                             f"{len(values) if isinstance(values, list) else type(values).__name__}")
        if not all(type(v) in (int, float) for v in values):
            raise GraphError(f"params.{key}: every value must be a number")


class GraphNetwork:
    """A DAG network; ``forward(x)`` takes ``(in,)`` or ``(B, in)`` like ``MLP.forward``.

    Args:
        input_size, output_size: numbers of input and output nodes.
        output_activation: the activation of every output node.
        hidden_activations: one per hidden node (nodes ``input_size + output_size ...``).
        connections: ``(source, target)`` node ids.
        weights: one per connection; biases: one per output node, then one per hidden node.
    """

    recurrent = False
    """No state between calls (``RecurrentGraphNetwork``: True)."""

    def reset(self) -> None:
        """Nothing to forget (the same call as ``RecurrentGraphNetwork.reset``)."""

    def __init__(self, input_size: int, output_size: int, output_activation: str, hidden_activations: Sequence[str],
                 connections: Sequence[tuple[int, int]], weights: Sequence[float] | np.ndarray,
                 biases: Sequence[float] | np.ndarray) -> None:
        self.input_size = int(input_size)
        self.output_size = int(output_size)
        self.output_activation = str(output_activation)
        self.hidden_activations = [str(a) for a in hidden_activations]
        self.activations = [self.output_activation] * self.output_size + self.hidden_activations
        self.connections = [(int(s), int(d)) for s, d in connections]
        try:
            check_graph(self.architecture(), {"graph.bias": [float(b) for b in biases],
                                              "graph.weight": [float(w) for w in weights]})
        except GraphError as exc:
            raise ValueError(str(exc)) from None
        self.weights = np.asarray(weights, dtype=np.float32).reshape(-1)
        self.biases = np.asarray(biases, dtype=np.float32).reshape(-1)
        n = self.n_nodes = self.input_size + len(self.activations)
        level = graph_levels(n, self.input_size, self.connections)
        # Per level: the nodes it computes (a slice when they are consecutive, as a NEAT genome's outputs are),
        # the dense (n, k) weight block into them, their biases, and their activations grouped (None when the
        # whole level has one), so a batch is one matmul and one activation call per group.
        self._levels: list[tuple[Any, np.ndarray, np.ndarray, str | None, list[tuple[str, np.ndarray]]]] = []
        for lv in range(1, max(level) + 1 if n else 1):
            nodes = np.array([i for i in range(self.input_size, n) if level[i] == lv], dtype=np.int64)
            if nodes.size == 0:
                continue
            col = {int(node): k for k, node in enumerate(nodes)}
            w = np.zeros((n, nodes.size), dtype=np.float32)
            for (s, d), wt in zip(self.connections, self.weights):
                if d in col:
                    w[s, col[d]] += wt
            acts = [self.activations[int(node) - self.input_size] for node in nodes]
            groups = [(a, np.array([k for k, b in enumerate(acts) if b == a])) for a in sorted(set(acts))]
            where: Any = nodes
            if int(nodes[-1]) - int(nodes[0]) == nodes.size - 1:
                where = slice(int(nodes[0]), int(nodes[-1]) + 1)
            only = acts[0] if len(groups) == 1 else None
            self._levels.append((where, w, self.biases[nodes - self.input_size], only, groups))

    @property
    def params(self) -> np.ndarray:
        """Every weight then every bias (for counting, like ``MLP.params``)."""
        return np.concatenate([self.weights, self.biases])

    def forward(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        one = x.ndim == 1
        rows = x.reshape(-1, self.input_size)
        values = np.zeros((rows.shape[0], self.n_nodes), dtype=np.float32)
        values[:, :self.input_size] = rows
        for where, w, b, only, groups in self._levels:
            z = values @ w
            z += b
            if only is not None:
                if only != "linear":
                    _activate(only, z)
            else:
                for act, cols in groups:
                    if act != "linear":
                        part = z[:, cols]
                        _activate(act, part)
                        z[:, cols] = part
            values[:, where] = z
        out = values[:, self.input_size:self.input_size + self.output_size].copy()
        return out[0] if one else out

    __call__ = forward

    def architecture(self) -> dict[str, Any]:
        """The model file's ``architecture``: a layer stack's keys (``hidden`` empty) plus ``graph``."""
        return {"input_size": self.input_size, "hidden": [], "output_size": self.output_size,
                "output_activation": self.output_activation,
                "graph": {"nodes": list(self.hidden_activations),
                          "connections": [[s, d] for s, d in self.connections]}}

    def state_dict(self) -> dict[str, np.ndarray]:
        """The model file's ``params``: one weight per connection, one bias per output and hidden node."""
        return {"graph.weight": self.weights.copy(), "graph.bias": self.biases.copy()}

    def __repr__(self) -> str:
        hidden = len(self.hidden_activations)
        return (f"GraphNetwork({self.input_size} -> {self.output_size}, {hidden} hidden nodes, "
                f"{len(self.connections)} connections)")


class RecurrentGraphNetwork:
    """A graph network with cycles, one activation per ``step``; the arguments are ``GraphNetwork``'s.

    ``step(x)`` (``(in,)`` or ``(B, in)``): ``v_t[n] = act_n(bias_n + sum_{(s, n, w)} w * u[s])`` for every
    non-input node ``n``, where ``u`` is this step's inputs and the previous step's values of the other
    nodes (zero after ``reset``). An output depth ``d`` away from the inputs answers ``d - 1`` steps late.
    ``forward`` is ``step``: whoever plays an episode calls ``reset`` at its start (``Model.reset``).

    In the model file it is a graph architecture with ``graph.recurrent: true`` (cycles and self loops
    allowed; docs/model-format.md, "Recurrent graphs").
    """

    recurrent = True

    def __init__(self, input_size: int, output_size: int, output_activation: str, hidden_activations: Sequence[str],
                 connections: Sequence[tuple[int, int]], weights: Sequence[float] | np.ndarray,
                 biases: Sequence[float] | np.ndarray) -> None:
        self.input_size, self.output_size = int(input_size), int(output_size)
        self.output_activation = str(output_activation)
        self.hidden_activations = [str(a) for a in hidden_activations]
        self.activations = [self.output_activation] * self.output_size + self.hidden_activations
        n = self.n_nodes = self.input_size + len(self.activations)
        self.connections = [(int(s), int(d)) for s, d in connections]
        self.weights = np.asarray(weights, dtype=np.float32).reshape(-1)
        self.biases = np.asarray(biases, dtype=np.float32).reshape(-1)
        if len(self.weights) != len(self.connections) or len(self.biases) != n - self.input_size:
            raise ValueError("RecurrentGraphNetwork: one weight per connection and one bias per non-input node")
        for s, d in self.connections:
            if not (0 <= s < n and self.input_size <= d < n):
                raise ValueError(f"RecurrentGraphNetwork: connection [{s}, {d}] must end at a non-input node "
                                 f"of the {n}")
        self.matrix = np.zeros((n, n - self.input_size), dtype=np.float32)
        for (s, d), w in zip(self.connections, self.weights):
            self.matrix[s, d - self.input_size] += w
        self.groups = [(a, np.array([k for k, b in enumerate(self.activations) if b == a]))
                       for a in sorted(set(self.activations)) if a != "linear"]
        self.values = np.zeros((1, n), dtype=np.float32)

    def reset(self) -> None:
        """Forget the state: every node's value back to 0."""
        self.values = np.zeros_like(self.values)

    def step(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        one = x.ndim == 1
        rows = x.reshape(-1, self.input_size)
        if self.values.shape[0] != rows.shape[0]:
            self.values = np.zeros((rows.shape[0], self.n_nodes), dtype=np.float32)
        u = self.values.copy()
        u[:, :self.input_size] = rows
        z = u @ self.matrix + self.biases
        for act, cols in self.groups:
            part = z[:, cols]
            _activate(act, part)
            z[:, cols] = part
        self.values = np.concatenate([rows, z], axis=1)
        out = z[:, :self.output_size].copy()
        return out[0] if one else out

    __call__ = forward = step

    def task_policy(self) -> Any:
        """``policy(rows, obs, tasks)``, as ``evolution.Evaluation`` calls a policy that ``keeps_state``: this
        network with a state per task (episode), zero when a task is first seen; ``rows`` is ignored."""
        n, n_in = self.n_nodes, self.input_size
        state = [np.zeros((0, n), dtype=np.float32)]

        def policy(rows: np.ndarray, obs: np.ndarray, tasks: np.ndarray) -> np.ndarray:
            tasks = np.asarray(tasks, dtype=np.int64)
            values = state[0]
            top = int(tasks.max()) + 1 if len(tasks) else 0
            if top > len(values):
                grown = np.zeros((max(top, 2 * len(values)), n), dtype=np.float32)
                grown[:len(values)] = values
                values = state[0] = grown
            self.values = values[tasks]
            out = self.step(np.asarray(obs, dtype=np.float32).reshape(len(tasks), n_in))
            values[tasks] = self.values
            return out
        policy.keeps_state = True  # type: ignore[attr-defined]
        return policy

    @property
    def params(self) -> np.ndarray:
        """Every weight then every bias (for counting, like ``GraphNetwork.params``)."""
        return np.concatenate([self.weights, self.biases])

    def architecture(self) -> dict[str, Any]:
        """``GraphNetwork.architecture`` with ``graph.recurrent: true``."""
        return {"input_size": self.input_size, "hidden": [], "output_size": self.output_size,
                "output_activation": self.output_activation,
                "graph": {"nodes": list(self.hidden_activations),
                          "connections": [[s, d] for s, d in self.connections], "recurrent": True}}

    def state_dict(self) -> dict[str, np.ndarray]:
        """The model file's ``params``, as ``GraphNetwork``'s."""
        return {"graph.weight": self.weights.copy(), "graph.bias": self.biases.copy()}

    def __repr__(self) -> str:
        return (f"RecurrentGraphNetwork({self.input_size} -> {self.output_size}, {len(self.hidden_activations)} "
                f"hidden nodes, {len(self.connections)} connections)")
