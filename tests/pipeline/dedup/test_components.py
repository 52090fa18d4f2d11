"""Connected components by large-star / small-star, against union-find, on hand-made and random graphs."""
from __future__ import annotations

import random

import pytest

from corpusforge.pipeline.dedup.components import (
    assign_survivors, is_converged, large_star, orient_small, small_star, star_components, union_find_components,
)


def test_large_star_links_larger_neighbours_to_the_minimum():
    assert sorted(large_star(5, [3, 7, 9])) == [(7, 3), (9, 3)]
    assert sorted(large_star(2, [3, 7])) == [(3, 2), (7, 2)]
    assert large_star(9, [3, 7]) == []


def test_small_star_links_everything_to_the_minimum():
    assert sorted(small_star(9, [3, 7])) == [(7, 3), (9, 3)]
    assert orient_small((3, 9)) == (9, 3) and orient_small((9, 3)) == (9, 3)


@pytest.mark.parametrize("n", [2, 3, 10, 200])
def test_chain(n):
    edges = [(i, i + 1) for i in range(n - 1)]
    components, rounds = star_components(edges)
    assert components == {i: 0 for i in range(n)}
    assert rounds <= 10


def test_shuffled_chain_and_reversed_labels():
    rng = random.Random(3)
    labels = list(range(500))
    rng.shuffle(labels)
    edges = [(labels[i], labels[i + 1]) for i in range(499)]
    components, _ = star_components(edges)
    assert components == {i: 0 for i in range(500)}


def test_star_and_its_centre_need_not_be_the_minimum():
    edges = [(50, leaf) for leaf in [10, 60, 70, 80, 90]]
    components, _ = star_components(edges)
    assert components == {n: 10 for n in [10, 50, 60, 70, 80, 90]}


def test_singletons_and_self_loops_are_not_nodes():
    components, _ = star_components([(1, 1), (4, 5)])
    assert components == {4: 4, 5: 4}
    assert union_find_components([(4, 5)], nodes=[1]) == {1: 1, 4: 4, 5: 4}
    assert star_components([]) == ({}, 1)


def test_several_components_with_tuple_nodes():
    a, b, c, d, e = [(1, 0.0, x) for x in "abcde"]
    top = (0, -0.9, "z")  # a scored node ranks before all unscored ones
    components, _ = star_components([(a, b), (b, c), (d, e), (e, top)])
    assert components == {a: a, b: a, c: a, d: top, e: top, top: top}


def test_random_graphs_match_union_find():
    rng = random.Random(0)
    for _ in range(30):
        n = rng.randint(2, 400)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(1, n))]
        edges = [e for e in edges if e[0] != e[1]]
        components, rounds = star_components(edges)
        assert components == union_find_components(edges)


def test_is_converged():
    assert is_converged([(1, 2), (1, 3), (4, 5)])
    assert not is_converged([(1, 2), (2, 3)])  # 2 is a centre and a child
    assert not is_converged([(1, 3), (2, 3)])  # 3 has two centres


def test_too_few_rounds_raise():
    with pytest.raises(RuntimeError, match="did not converge"):
        star_components([(i, i + 1) for i in range(1000)], max_rounds=2)


# ------------------------------------------------------------------------------ splitting components


def test_assign_survivors_splits_a_chain():
    """A~B~C~D with no other verified pair: B goes to A, C is kept (unlike A), D goes to C."""
    assert assign_survivors([(1, 2, 0.6), (2, 3, 0.7), (3, 4, 0.8)]) == {2: (1, 0.6), 4: (3, 0.8)}


def test_assign_survivors_takes_the_first_kept_node_and_ignores_order():
    edges = [(5, 1, 0.9), (5, 3, 0.95), (3, 2, 0.5), (4, 2, 0.7), (4, 1, 0.55)]
    expected = {3: (2, 0.5), 4: (1, 0.55), 5: (1, 0.9)}  # 1, 2 kept (no edge between them)
    assert assign_survivors(edges) == expected
    for seed in range(5):
        shuffled = random.Random(seed).sample(edges, len(edges))
        assert assign_survivors(shuffled + shuffled[:2]) == expected  # duplicates change nothing


def test_assign_survivors_every_removal_is_an_edge_to_a_kept_node():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randrange(2, 40)
        edges = [(rng.randrange(n), rng.randrange(n), round(rng.random(), 3)) for _ in range(rng.randrange(1, 80))]
        pairs = {frozenset(e[:2]) for e in edges}
        assigned = assign_survivors(edges)
        for node, (survivor, _) in assigned.items():
            assert survivor < node and survivor not in assigned and frozenset((node, survivor)) in pairs
        kept = {x for e in edges for x in e[:2] if e[0] != e[1]} - assigned.keys()
        # no kept node could have gone to an earlier kept node
        assert not any(frozenset((a, b)) in pairs for a in kept for b in kept if a != b)


def test_assign_survivors_priority_prefers_the_centre():
    """Variants 1 and 3 of base 2 are unlike each other. By id alone 1 survives and 3 must be kept too; a
    priority that prefers more verified partners keeps the base and removes both variants."""
    edges = [(1, 2, 0.7), (2, 3, 0.8)]
    assert assign_survivors(edges) == {2: (1, 0.7)}
    assert assign_survivors(edges, lambda node, degree: (-degree, node)) == {1: (2, 0.7), 3: (2, 0.8)}
