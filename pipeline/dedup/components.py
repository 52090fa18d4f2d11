"""Connected components of the duplicate graph, as pure functions.

The distributed algorithm is large-star / small-star (Kiveris et al., "Connected Components in MapReduce
and Beyond", SoCC 2014). Nodes are totally ordered (here by ``survivor_rank``); each round regroups the
edge list by node and rewires it:

- *large-star* at node u: link every neighbour larger than u to the smallest node of u's closed
  neighbourhood;
- *small-star* at node u, seeing only its neighbours not larger than u: link all of them and u itself to
  the smallest of them.

Neither step changes the components; alternating them turns every component into a star centred on its
smallest node in O(log^2 n) rounds (usually a handful). A node only ever sees its own edges, so the memory
one step needs is bounded by the largest degree, not by the corpus. ``star_components`` runs the same
steps in memory (tests, small inputs); the Beam version lives in ``corpusforge.pipeline.dedup.near``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterable, TypeVar

Node = TypeVar("Node", bound=Hashable)


def large_star(node, neighbours: Iterable) -> list[tuple]:
    """The edges large-star emits for ``node``: (v, m) for every neighbour v > node, m = min(node, nbrs)."""
    neighbours = set(neighbours)
    smallest = min(neighbours | {node})
    return [(v, smallest) for v in neighbours if v > node and v != smallest]


def small_star(node, smaller: Iterable) -> list[tuple]:
    """The edges small-star emits for ``node`` given its neighbours not larger than it: every one of them
    and ``node`` itself linked to the smallest."""
    smaller = set(smaller)
    smallest = min(smaller | {node})
    return [(v, smallest) for v in smaller | {node} if v != smallest]


def orient_small(edge: tuple) -> tuple:
    """Small-star's map: key each edge by its larger end."""
    u, v = edge
    return (u, v) if v <= u else (v, u)


def is_converged(edges: Iterable[tuple]) -> bool:
    """True when the (child, centre) edges form disjoint stars: no centre is also a child, and no child
    has two centres. After that, every child's centre is the smallest node of its component."""
    centre_of: dict = {}
    centres = set()
    for u, v in edges:
        child, centre = (u, v) if u > v else (v, u)
        if centre_of.setdefault(child, centre) != centre:
            return False
        centres.add(centre)
    return not (centres & centre_of.keys())


def star_components(edges: Iterable[tuple], max_rounds: int = 64) -> tuple[dict, int]:
    """``({node: smallest node of its component}, rounds)`` for every node that has an edge, computed with
    the same large-star / small-star steps as the Beam transform. Raises if ``max_rounds`` do not suffice."""
    current = {tuple(sorted(e)) for e in edges if e[0] != e[1]}
    for rounds in range(1, max_rounds + 1):
        adjacency = defaultdict(set)
        for u, v in current:
            adjacency[u].add(v)
            adjacency[v].add(u)
        large = {tuple(sorted(e)) for u, nbrs in adjacency.items() for e in large_star(u, nbrs)}
        smaller = defaultdict(set)
        for e in large:
            child, centre = orient_small(e)
            smaller[child].add(centre)
        new = {tuple(sorted(e)) for u, nbrs in smaller.items() for e in small_star(u, nbrs)}
        if new == current and is_converged(new):
            return {child: centre for centre, child in new} | {centre: centre for centre, _ in new}, rounds
        current = new
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


def union_find_components(edges: Iterable[tuple], nodes: Iterable = ()) -> dict:
    """``{node: smallest node of its component}`` by union-find: the reference the tests compare with."""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for node in nodes:
        find(node)
    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    return {x: find(x) for x in list(parent)}


def assign_survivors(edges: Iterable[tuple], priority=None) -> dict:
    """Split components so that every removed node is verified-similar to its survivor.

    ``edges``: verified pairs ``(u, v, similarity)`` (either order, duplicates allowed) of one component or
    of several. Nodes are taken in survivor order; each node goes to the first *kept* node (in that order)
    it has a verified edge with, and a node with no verified edge to a kept node is kept itself. So a chain
    A~B~C~D with A and C unlike keeps A and C and removes B (survivor A) and D (survivor C); nothing is
    removed in favour of a document it was never verified similar to.

    The survivor order is ``priority(node, degree)`` (degree: the node's verified partners), smallest first;
    by default the node itself. Returns ``{removed node: (survivor node, similarity of the pair)}``; kept
    nodes are absent. Depends on the edge set alone (not its order). O(E log E) for E edges.
    """
    neighbours: dict = defaultdict(dict)
    for u, v, similarity in edges:
        if u == v:
            continue
        known = neighbours[u].get(v)
        similarity = similarity if known is None else max(known, similarity)
        neighbours[u][v] = neighbours[v][u] = similarity
    if priority is None:
        order = {node: node for node in neighbours}
    else:
        order = {node: priority(node, len(partners)) for node, partners in neighbours.items()}
    survivor_of: dict = {}  # kept nodes map to themselves
    assigned: dict = {}
    for node in sorted(neighbours, key=order.__getitem__):
        partners = neighbours[node]
        earlier = [p for p in partners if p in survivor_of and survivor_of[p] == p]
        if earlier:
            first = min(earlier, key=order.__getitem__)
            assigned[node] = (first, partners[first])
            survivor_of[node] = first
        else:
            survivor_of[node] = node
    return assigned
